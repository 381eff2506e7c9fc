"""kernelfarm's TVM port against a TVM client and server written from the
protocol description (fake_tvm.py), on a real tracker process.

Run: /usr/bin/python3 -m unittest discover -s tests/tvm -p 'test_*.py' -v
(tests/tvm/python.test.ts runs it under node's test runner too). Standard
library only; node comes from $KFARM_NODE, else PATH.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_tvm  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE = os.environ.get("KFARM_NODE") or shutil.which("node")


def wait_for(what, probe, timeout=15.0, every=0.02):
    """The probe's first truthy value; AssertionError naming `what` after `timeout` seconds."""
    until = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception as err:  # noqa: BLE001 — reported on timeout
            last = err
        if time.monotonic() > until:
            raise AssertionError("timed out after %.1f s waiting for %s (last error: %s)" % (timeout, what, last))
        time.sleep(every)


class Tracker:
    """`kfarm tracker --port 0 --tvm-port 0` as a child process; its ports read from its stdout."""

    def __init__(self, *args):
        env = dict(os.environ, KFARM_LOG=os.environ.get("KFARM_TEST_LOG", "error"))
        self.proc = subprocess.Popen(
            [NODE, "--import", "tsx", os.path.join(ROOT, "cli", "main.ts"), "tracker", "--port", "0", "--tvm-port", "0", *args],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        out = ""
        deadline = time.monotonic() + 30
        while "tvm port" not in out:
            line = self.proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("kfarm tracker did not start: %s %s" % (out, self.proc.stderr.read()))
            out += line
        self.address = re.search(r"listening on (\S+)", out).group(1)
        host, port = re.search(r"tvm port (\S+):(\d+)", out).groups()
        self.tvm = (host, int(port))

    def status(self):
        """`kfarm status --json`: the Summary RPC, as an operator sees it."""
        run = subprocess.run(
            [NODE, "--import", "tsx", os.path.join(ROOT, "cli", "main.ts"), "status", "--tracker", self.address, "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=30,
        )
        if run.returncode != 0:
            raise RuntimeError("kfarm status failed: %s" % run.stderr)
        return json.loads(run.stdout)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def tvm_boards(status, key=None):
    return [b for b in status["boards"] if b["kind"] == "tvm-rpc" and (key is None or b["key"] == key)]


@unittest.skipIf(NODE is None, "node is not on PATH (set KFARM_NODE)")
class TvmTrackerProtocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tracker = Tracker()

    @classmethod
    def tearDownClass(cls):
        cls.tracker.stop()

    def setUp(self):
        self.servers = []
        self.conns = []

    def tearDown(self):
        for s in self.servers:
            s.stop()
        for c in self.conns:
            c.close()
        # The next test starts from an empty farm: every TVM server gone.
        wait_for("the TVM servers to leave", lambda: not tvm_boards(self.tracker.status()))

    def server(self, key, **kw):
        s = fake_tvm.FakeRpcServer(self.tracker.tvm, key, **kw)
        self.servers.append(s)
        return s

    def conn(self):
        c = fake_tvm.TrackerConn(*self.tracker.tvm)
        self.conns.append(c)
        return c

    def free(self, key, n=1):
        return wait_for("%d free TVM server(s) of key %s" % (n, key), lambda: len([b for b in tvm_boards(self.tracker.status(), key) if b["state"] == "free"]) >= n)

    def test_register_request_connect_and_the_lease_returns(self):
        server = self.server("py-cpu")
        self.free("py-cpu")
        [board] = tvm_boards(self.tracker.status(), "py-cpu")
        self.assertEqual(board["id"], "tvm@127.0.0.1:%d/py-cpu" % server.port)
        self.assertEqual(board["labels"], {"address": "127.0.0.1:%d" % server.port})
        self.assertEqual(board["capabilities"]["tvm_key"], "server:py-cpu")

        summary = self.conn().summary()
        self.assertEqual(summary["queue_info"]["py-cpu"], {"free": 1, "pending": 0})
        [info] = [i for i in summary["server_info"] if i["key"] == "server:py-cpu"]
        self.assertEqual(info["addr"], ["127.0.0.1", server.port])

        reply = self.conn().request("py-cpu")
        self.assertEqual(reply[0], fake_tvm.SUCCESS, reply)
        host, port, matchkey = reply[1]
        self.assertEqual((host, port, matchkey), ("127.0.0.1", server.port, server.matchkey))
        # A wrong key is refused by the server, as TVM's refuses it: the match key is what routes the client.
        with self.assertRaisesRegex(RuntimeError, "cannot find server that matches key"):
            fake_tvm.rpc_connect(host, port, "py-cpu:0.123")
        session, remote_key = fake_tvm.rpc_connect(host, port, matchkey)
        self.assertEqual(remote_key, "server:py-cpu")
        busy = wait_for("the board busy", lambda: [b for b in tvm_boards(self.tracker.status(), "py-cpu") if b["state"] == "busy" and b["session_lane"] == "tvm"])
        self.assertTrue(busy[0]["session_id"])
        self.assertTrue(busy[0]["client_id"].startswith("tvm:127.0.0.1"))
        self.assertEqual(self.conn().summary()["queue_info"]["py-cpu"], {"free": 0, "pending": 0})
        session.close()
        # The server puts itself back with a fresh key: the lease has ended, the board is free for the next client.
        self.free("py-cpu")
        self.assertEqual(server.sessions, ["client:" + matchkey])
        self.assertNotEqual(server.matchkey, matchkey)
        again = self.conn().request("py-cpu")
        self.assertEqual(again[1][2], server.matchkey)
        self.assertIsNone(server.error)

    def test_a_server_from_before_addr_registers_and_is_listed_where_it_connects_from(self):
        # TVM's servers before 0.8 sent UPDATE_INFO {"key": ...} alone; the address then comes from the connection and the PUT.
        server = self.server("py-old", send_addr=False)
        self.free("py-old")
        [info] = [i for i in self.conn().summary()["server_info"] if i["key"] == "server:py-old"]
        self.assertEqual(info["addr"], ["127.0.0.1", server.port])
        self.assertEqual(info["board"], "tvm@127.0.0.1:%d/py-old" % server.port)
        self.assertEqual(info["state"], "free")

    def test_priorities_serve_the_highest_first(self):
        server = self.server("py-prio", poll_s=0.5)
        self.free("py-prio")
        holder = self.conn().request("py-prio")
        session, _ = fake_tvm.rpc_connect(*holder[1])
        wait_for("the board busy", lambda: tvm_boards(self.tracker.status(), "py-prio")[0]["state"] == "busy")
        waiting = []
        for priority in (1, 5, 3):
            c = self.conn()
            c.send_request("py-prio", priority=priority)
            waiting.append((priority, c))
            wait_for("request %d queued" % priority, lambda: self.conn().summary()["queue_info"]["py-prio"]["pending"] == len(waiting))
        order = []
        lock = threading.Lock()

        def take(priority, c):
            reply = c.recv()
            s, _ = fake_tvm.rpc_connect(*reply[1])
            with lock:
                order.append(priority)
            s.close()

        threads = [threading.Thread(target=take, args=w) for w in waiting]
        for t in threads:
            t.start()
        session.close()
        for t in threads:
            t.join(30)
        self.assertEqual(order, [5, 3, 1])
        # The server notes a session after its handshake answer: the last client may be told before it is noted.
        wait_for("4 sessions served", lambda: len(server.sessions) == 4)

    def test_a_key_nobody_serves_waits_until_a_server_comes(self):
        c = self.conn()
        c.send_request("py-later")
        wait_for("the request waiting", lambda: self.conn().summary()["queue_info"].get("py-later", {}).get("pending") == 1)
        server = self.server("py-later")
        reply = c.recv()
        self.assertEqual(reply[0], fake_tvm.SUCCESS, reply)
        self.assertEqual(reply[1], ["127.0.0.1", server.port, server.matchkey])
        session, _ = fake_tvm.rpc_connect(*reply[1])
        session.close()
        wait_for("the session served", lambda: len(server.sessions) == 1)

    def test_a_late_client_keeps_its_key_until_the_server_gives_it_up(self):
        server = self.server("py-late", poll_s=1.0)
        self.free("py-late")
        late = self.conn().request("py-late")
        self.assertEqual(late[0], fake_tvm.SUCCESS)
        # Three polls without the key (the server gives it up at the fourth, as TVM's does): still this client's.
        wait_for("three polls out", lambda: server.misses == 3, timeout=10)
        # (SUMMARY on the TVM port, not `kfarm status`: a node process's start outlasts the server's next poll.)
        self.assertEqual(self.conn().summary()["queue_info"]["py-late"], {"free": 0, "pending": 0})
        session, _ = fake_tvm.rpc_connect(*late[1])
        session.close()
        wait_for("the late session served", lambda: server.sessions == ["client:" + late[1][2]])
        self.free("py-late")
        # A client that never comes: the server gives the key up and PUTs a fresh one; the old key is refused.
        never = self.conn().request("py-late")
        wait_for("the server's fresh key", lambda: server.matchkey != never[1][2], timeout=10)
        self.free("py-late")
        with self.assertRaisesRegex(RuntimeError, "cannot find server that matches key"):
            fake_tvm.rpc_connect(*never[1])

    def test_query_rpc_tracker_prints_the_farm(self):
        server = self.server("py-query")
        self.free("py-query")
        host, port = self.tracker.tvm
        out = fake_tvm.query_rpc_tracker_output(host, port)
        expected = (
            "Tracker address %s:%d\n" % (host, port)
            + "\n"
            + "Server List\n"
            + "------------------------------\n"
            + "server-address           key\n"
            + "------------------------------\n"
            + ("127.0.0.1:%d" % server.port).rjust(21) + "    server:py-query\n"
            + "------------------------------\n"
            + "\n"
            + "Queue Status\n"
            + "--------------------------------\n"
            + "key        total  free  pending\n"
            + "--------------------------------\n"
            + "py-query   1      1     0      \n"
            + "--------------------------------\n"
            + "\n"
        )
        self.assertEqual(out, expected)

    def test_a_server_that_stops_answering_leaves_the_pool(self):
        server = self.server("py-frozen", poll_s=0.5)
        self.free("py-frozen")
        server.freeze()
        # Silent for 6 s, then its port does not answer the probe within 2 s: it leaves.
        started = time.monotonic()
        wait_for("the frozen server to leave", lambda: not tvm_boards(self.tracker.status(), "py-frozen"), timeout=20)
        self.assertGreater(time.monotonic() - started, 5.0)
        # A request for its key waits for a server, as with TVM's tracker (which would hand out the frozen one).
        c = self.conn()
        c.send_request("py-frozen")
        wait_for("the request waiting", lambda: self.conn().summary()["queue_info"].get("py-frozen", {}).get("pending") == 1)


if __name__ == "__main__":
    unittest.main()
