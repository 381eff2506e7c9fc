/** time_evaluate: TVM's time_evaluator, run next to the board (../time-evaluator.ts). */
import { FarmError } from "../../../protos/index.ts";
import type { TimeEvaluate__Output } from "../../../protos/gen/farm/v1/TimeEvaluate.ts";
import type { SessionState } from "../session-state.ts";
import { evaluateTime, type TimeEvaluation } from "../time-evaluator.ts";
import { callSettings, guarded, prepare } from "./calls.ts";
import type { Handler } from "./operation.ts";

export const timeEvaluate: Handler<"time_evaluate"> = (s, id, t, mux) => {
  const result = evaluate(s, t);
  mux.reply({ id, time: { results_s: result.resultsS, number: result.number, conditions: result.conditions, stopped_by: result.stoppedBy } });
};

/** TVM's time_evaluator for `t`, and the board's conditions over it. */
export function evaluate(s: SessionState, t: TimeEvaluate__Output): TimeEvaluation & { conditions: Record<string, string> } {
  if (!t.call) throw new FarmError("BAD_ARGUMENTS", "time_evaluate needs a call");
  const c = t.call;
  if (t.repeat < 1 || t.number < 1)
    throw new FarmError("BAD_ARGUMENTS", `time_evaluate needs number ≥ 1 and repeat ≥ 1 (got number ${t.number}, repeat ${t.repeat})`);
  if (!(t.target_rse >= 0 && t.target_rse < 1) || !(t.budget_ms >= 0)) {
    throw new FarmError(
      "BAD_ARGUMENTS",
      `time_evaluate: targetRse must be in [0, 1) (0.01: the median within ~1 %) and budgetMs ≥ 0 (got targetRse ${t.target_rse}, budgetMs ${t.budget_ms})`,
    );
  }
  const { fn, args } = prepare(s, c);
  const settings = callSettings(s, c, t);
  const watched = s.backend.watchConditions?.();
  const evaluation = guarded(s, c, "time_evaluate of", () =>
    evaluateTime(
      {
        number: t.number,
        repeat: t.repeat,
        minRepeatMs: t.min_repeat_ms,
        cooldownMs: t.cooldown_ms,
        repeatsToCooldown: t.repeats_to_cooldown || 1,
        limitZeroTimeIterations: t.limit_zero_time_iterations || 100,
        targetRse: t.target_rse,
        budgetMs: t.budget_ms,
      },
      () => s.backend.invoke(fn, args, { launch: settings.launch }),
      (n) => s.backend.timeCalls(fn, args, n, settings),
    ),
  );
  return { ...evaluation, conditions: watched ? watched() : s.backend.stats().info };
}
