"""connect_tracker(): the host's handle on a farm (host-sdk/tracker-client.ts).
`request(key)` waits in the key's queue for a board and opens a session on it
(TVM's `tracker.request(key)`).
"""
from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from typing import Mapping, Optional

import grpc

from ._contract import DEFAULT_TRACKER_PORT, ROUTES, SESSION_REQUEST_HEADER
from .channel import SessionStream, connection_failed, open_lane
from .credentials import ClientSecurity, call_metadata, diagnose_transport, env_security, grpc_channel
from .errors import FarmError
from .frames import encode_session_request
from .multiplexer import Multiplexer
from .option_limits import check_option
from .protos import host_pb2, host_pb2_grpc
from .session import Session
from .summary import FarmSummary, board_info, farm_summary
from .wrong_port import wrong_port_hint

DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_RPC_TIMEOUT_S = 10.0
#: auto: how long the direct lane may take before the relay is tried.
DEFAULT_DIRECT_TIMEOUT_S = 1.0
#: Grace on top of a deadline the host gave, for the tracker's own answer to arrive first.
_REQUEST_DEADLINE_SLACK_S = 2.0


def parse_route(value: Optional[str], what: str) -> str:
    if value is None or value == "":
        return "auto"
    if value in ROUTES:
        return value
    raise FarmError("INVALID_ARGUMENT", f"{what}: route must be one of {', '.join(ROUTES)}, got {value!r}")


def parse_address(address: str) -> tuple[str, int]:
    """HOST:PORT with a clear error for anything else."""
    if isinstance(address, str) and ":" in address:
        host, port = address.rsplit(":", 1)
        host = host.strip("[]")
        if host and port.isdigit() and 0 < int(port) <= 65535:
            return host, int(port)
    raise FarmError("INVALID_ARGUMENT", f"address must be HOST:PORT, got {address!r}")


def _ms(seconds: Optional[float], option: str) -> int:
    """request()'s `option` in seconds as the wire's uint32 milliseconds; None or 0: the tracker's default."""
    return 0 if seconds is None else int(check_option("request", option, seconds))


class TrackerClient:
    """A connection to a tracker; use it as a context manager or close() it."""

    def __init__(self, address: str, channel: grpc.Channel, security: ClientSecurity, client_id: Optional[str], rpc_timeout: float):
        self.address = address
        self.client_id = client_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self._channel = channel
        self._security = security
        self._stub = host_pb2_grpc.HostServiceStub(channel)
        self._rpc_timeout = rpc_timeout
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise FarmError("CANCELLED", f"this client of the tracker at {self.address} is closed: connect_tracker() again")

    def __enter__(self) -> "TrackerClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unreachable(self, err: BaseException) -> FarmError:
        """A call's failure, naming the tracker when the call never reached it (its own answers say what they mean)."""
        e = FarmError.from_exception(err)
        if connection_failed(e):
            self._connect_soon()
            return e.with_message(f"cannot reach the tracker at {self.address}: {e.message}")
        return e

    def _connect_soon(self) -> None:
        """Asks the gRPC channel to connect now. After its tracker went away, grpcio's channel (1.51) stays in
        TRANSIENT_FAILURE and tries again only every 4 to 5 s, whatever its reconnect backoff, failing calls fast
        meanwhile: a caller that retries a restarted tracker would wait that long for nothing."""

        def ignore(_state: object) -> None:
            pass

        try:
            self._channel.subscribe(ignore, try_to_connect=True)
            self._channel.unsubscribe(ignore)
        except Exception:  # noqa: BLE001 - only a hint to the channel; the caller's next call says what happened
            pass

    def request(
        self,
        key: str,
        priority: int = 1,
        session_timeout: Optional[float] = None,
        labels: Optional[Mapping[str, str]] = None,
        deadline: Optional[float] = None,
        route: Optional[str] = None,
        direct_timeout: float = DEFAULT_DIRECT_TIMEOUT_S,
        board: Optional[str] = None,
    ) -> Session:
        """Waits for a board of `key` and opens a session on it.

        `priority`: larger is served first (TVM's default 1). `session_timeout`
        (seconds): the lease ends after this long; None or 0: the longest the
        tracker (and your token) allows. `labels`: every one must match the
        board's. `deadline` (seconds): the longest wait in the queue; None: the
        tracker's default (60 s unless set). Given, it is also how long a
        request for a key no board serves yet waits for one to attach (an
        agent started just before the script); without it such a request
        fails NO_BOARD at once. `route`: how the session's frames
        travel — "direct" to the board's worker, "relay" through the tracker's
        data port, "grpc" on the tracker's gRPC port, "auto" direct with relay
        as its fallback (default $KFARM_ROUTE, else auto); `session.lane` says
        which it got. `direct_timeout` (seconds, auto): how long the direct
        lane may take before the relay is tried. `board`: only this board (its
        id, AGENT/NAME, as `kfarm status` shows it), which must serve `key`."""
        self._check_open()
        chosen = parse_route(route if route is not None else os.environ.get("KFARM_ROUTE"), "request()")
        if not isinstance(key, str):
            raise FarmError("INVALID_ARGUMENT", f"request(): key must be a string, got {type(key).__name__}")
        priority = int(check_option("request", "priority", priority))
        label_map = dict(labels or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in label_map.items()):
            raise FarmError("INVALID_ARGUMENT", f"request(): labels must map strings to strings, got {label_map!r}")
        deadline_ms = _ms(deadline, "deadline")
        _ms(direct_timeout, "direct_timeout")  # checked here; open_lane takes the seconds
        if board is not None and not isinstance(board, str):
            raise FarmError("INVALID_ARGUMENT", f"request(): board must be a board id string (AGENT/NAME), got {type(board).__name__}")
        request = encode_session_request(
            key, priority, label_map, deadline_ms, self.client_id, _ms(session_timeout, "session_timeout"), chosen, board or ""
        )
        metadata = call_metadata(self._security) + [(SESSION_REQUEST_HEADER, request)]
        # No gRPC deadline: the stream lives as long as the lease. The tracker answers at the queue deadline; the
        # host's own limit only guards against a tracker that never does.
        stream = SessionStream(self._channel, metadata)
        try:
            grant = stream.await_grant(deadline_ms / 1000 + _REQUEST_DEADLINE_SLACK_S if deadline_ms else None)
        except FarmError as err:
            if stream.queued_at is not None and connection_failed(err):
                self._connect_soon()
                raise err.with_message(
                    f'the tracker at {self.address} went away while this request for key "{key}" waited in its queue '
                    f"(for {round((time.monotonic() - stream.queued_at) * 1000)} ms; {err.message}): request again; a restarted "
                    "tracker takes requests as soon as it listens, and its agents re-attach within a second"
                )
            raise self._unreachable(err)
        try:
            channel, lane, note = open_lane(grant, stream, self.address, self._security, direct_timeout)
        except FarmError as err:
            # The lease goes back at once rather than at the open timeout; a lease that ended meanwhile says why.
            stream.cancel()
            raise stream.early_end() or err
        ended = stream.early_end()
        if ended:
            channel.abort()
            raise ended
        return Session(grant.session_id, board_info(grant.board), Multiplexer(channel, grant.session_id), lane, note)

    def summary(self, key: Optional[str] = None, health_history: bool = False) -> FarmSummary:
        """The farm's state (TVM's query_rpc_tracker): `queues` per key, `boards`,
        `agents`; with `key`, that key's boards and queue only; with
        `health_history`, each board's last health changes and timed canaries
        too. Python objects (kernelfarm.summary), not the wire's messages."""
        self._check_open()
        try:
            reply = self._stub.Summary(
                host_pb2.SummaryRequest(key=key or "", health_history=health_history),
                metadata=call_metadata(self._security),
                timeout=self._rpc_timeout,
            )
        except grpc.RpcError as err:
            raise self._unreachable(err)
        return farm_summary(reply)

    def close(self) -> None:
        """Closes the connection; the sessions it opened end with it (CANCELLED)."""
        self._closed = True
        self._channel.close()


#: Where connect_tracker() dials when it is given no address and KFARM_TRACKER is not set (TypeScript's DEFAULT_TRACKER_ADDRESS).
DEFAULT_TRACKER_ADDRESS = f"127.0.0.1:{DEFAULT_TRACKER_PORT}"


def default_tracker() -> tuple[str, str]:
    """The address a client that names no tracker dials, and why: $KFARM_TRACKER, else DEFAULT_TRACKER_ADDRESS."""
    from_env = os.environ.get("KFARM_TRACKER", "").strip()
    if from_env:
        return from_env, "KFARM_TRACKER's value"
    return DEFAULT_TRACKER_ADDRESS, "the default: no tracker address was given and KFARM_TRACKER is not set"


def connect_tracker(
    address: Optional[str] = None,
    token: Optional[str] = None,
    tls_ca: Optional[str] = None,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    tls_server_name: Optional[str] = None,
    client_id: Optional[str] = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    rpc_timeout: float = DEFAULT_RPC_TIMEOUT_S,
) -> TrackerClient:
    """Connects to a tracker at HOST:PORT.

    `token`: a client token from `kfarm token create` (default $KFARM_TOKEN).
    `tls_ca`: the farm's CA, for a tracker that speaks TLS, with `tls_cert` and
    `tls_key` for mutual TLS (default $KFARM_TLS_CA, $KFARM_TLS_CERT,
    $KFARM_TLS_KEY; else plaintext). `client_id`: who this host is, for
    fairness between clients (default host name, pid and a random part; on a
    farm with tokens the tracker uses the token's name). Fails with
    UNAVAILABLE naming the address if nothing answers within
    `connect_timeout` seconds, saying so when the reason is TLS on one side,
    and saying what answered (and which port to use) when it is the
    tracker's HTTP or TVM port — at once, not at the timeout. Without an
    `address`, $KFARM_TRACKER, else 127.0.0.1:9190 (where `kfarm tracker`
    listens by default, as TVM's query_rpc_tracker assumes); an error then
    says where the address came from."""
    check_option("connect_tracker", "connect_timeout", connect_timeout)
    check_option("connect_tracker", "rpc_timeout", rpc_timeout)
    if address is not None:
        return _dial(address, token, tls_ca, tls_cert, tls_key, tls_server_name, client_id, connect_timeout, rpc_timeout)
    address, why = default_tracker()
    try:
        return _dial(address, token, tls_ca, tls_cert, tls_key, tls_server_name, client_id, connect_timeout, rpc_timeout)
    except FarmError as e:
        raise FarmError(e.code, f"{e.message} (the address {address} is {why})", e.details) from None


def _dial(
    address: str,
    token: Optional[str],
    tls_ca: Optional[str],
    tls_cert: Optional[str],
    tls_key: Optional[str],
    tls_server_name: Optional[str],
    client_id: Optional[str],
    connect_timeout: float,
    rpc_timeout: float,
) -> TrackerClient:
    host, port = parse_address(address)
    security = env_security(token, tls_ca, tls_cert, tls_key, tls_server_name)
    channel = grpc_channel(address, security)
    ready, hint = _wait_ready(channel, host, port, connect_timeout)
    if not ready:
        channel.close()
        why = hint or wrong_port_hint(host, port) or diagnose_transport(host, port, security.tls is not None)
        raise FarmError(
            "UNAVAILABLE",
            why or f"cannot reach the tracker at {address} within {round(connect_timeout * 1000)} ms; is `kfarm tracker` running there?",
        ) from None
    return TrackerClient(address, channel, security, client_id, rpc_timeout)


def _wait_ready(channel: grpc.Channel, host: str, port: int, timeout_s: float) -> tuple[bool, Optional[str]]:
    """Whether `channel` connects within `timeout_s`, and if not, what answered on the port when that is known early:
    another protocol fails the channel's first attempt within a round trip, and is named then, not at the timeout."""
    ready = grpc.channel_ready_future(channel)
    wake = threading.Event()
    failed = threading.Event()

    def watch(state: grpc.ChannelConnectivity) -> None:
        if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE:
            failed.set()
            wake.set()

    ready.add_done_callback(lambda _: wake.set())
    channel.subscribe(watch)
    try:
        until = time.monotonic() + timeout_s
        probed = False
        while not ready.done():
            left = until - time.monotonic()
            if left <= 0 or not wake.wait(left):
                ready.cancel()
                return False, None
            wake.clear()
            if failed.is_set() and not probed:
                probed = True
                hint = wrong_port_hint(host, port)
                if hint:
                    ready.cancel()
                    return False, hint
        return True, None
    finally:
        channel.unsubscribe(watch)
