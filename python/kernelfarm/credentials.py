"""Credentials: how the Python SDK reaches a farm's ports, as runtime/credentials.ts
does for the TypeScript one. TLS (the farm's CA, and a client certificate for
mutual TLS) on the tracker's gRPC port and on lanes; a token in the
`authorization` metadata of every call ("Bearer <token>") and in the relay
lane's hello.
"""
from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Optional, Union

import grpc

from . import _contract
from ._contract import MAX_TOKEN_CHARS
from .errors import FarmError
from .frames import MAX_MESSAGE_BYTES

AUTHORIZATION_HEADER = "authorization"
_PRINTABLE = re.compile(r"^[\x21-\x7e]*$")

#: Liveness: ping the tracker every 10 s (twice the tracker's interval) and give up on it after 5 s without an answer.
KEEPALIVE_TIME_MS = 2 * _contract.KEEPALIVE_TIME_MS
KEEPALIVE_TIMEOUT_MS = _contract.KEEPALIVE_TIMEOUT_MS
#: A client whose tracker went away re-dials within ~2 s of its return (host-sdk/tracker-client.ts).
RECONNECT_MAX_MS = 2_000

CHANNEL_OPTIONS: list[tuple[str, Union[int, str]]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    # C-core stops pinging after two pings without data unless told otherwise; the tracker allows one per 5 s.
    ("grpc.http2.max_pings_without_data", 0),
    # No call is ever retried: a session frame must not be replayed.
    ("grpc.enable_retries", 0),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_MAX_MS),
    # Each client keeps its own connection.
    ("grpc.use_local_subchannel_pool", 1),
]


@dataclass(frozen=True)
class ClientTls:
    """The CA that signed the farm's certificates, and this client's own for mutual TLS."""

    ca_file: str
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    #: The name to check the server's certificate against, when the address's host is not it.
    server_name: Optional[str] = None


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a farm port: plaintext without `tls`, anonymous without `token`."""

    tls: Optional[ClientTls] = None
    token: Optional[str] = None


def check_token_shape(token: str) -> None:
    """A token's outer shape; whether the tracker knows it is the tracker's to say."""
    if len(token) > MAX_TOKEN_CHARS:
        raise FarmError("UNAUTHENTICATED", f"the token is {len(token)} characters long; kernelfarm tokens are at most {MAX_TOKEN_CHARS}")
    if not _PRINTABLE.match(token):
        raise FarmError("UNAUTHENTICATED", "the token holds spaces or control characters; pass it as `kfarm token create` printed it")


def _read_pem(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            pem = f.read()
    except OSError as err:
        raise FarmError(
            "INVALID_ARGUMENT", f"{what} {path}: cannot be read ({err.strerror}); `kfarm certs init DIR` makes a CA and certificates"
        ) from err
    if b"-----BEGIN " not in pem:
        raise FarmError("INVALID_ARGUMENT", f'{what} {path}: not a PEM file (no "-----BEGIN" line)')
    return pem


def client_security(
    tls_ca: Optional[str] = None,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    tls_server_name: Optional[str] = None,
    token: Optional[str] = None,
    what: str = "connect_tracker",
) -> ClientSecurity:
    """The settings checked up front: files readable PEM, pairs complete, the token printable."""
    if bool(tls_cert) != bool(tls_key):
        raise FarmError(
            "INVALID_ARGUMENT",
            f"{what}: tls_cert and tls_key go together (a client certificate and its key), "
            f"got only {'tls_cert' if tls_cert else 'tls_key'}",
        )
    if (tls_cert or tls_server_name) and not tls_ca:
        raise FarmError(
            "INVALID_ARGUMENT",
            f"{what}: {'tls_cert' if tls_cert else 'tls_server_name'} needs tls_ca, the CA that signed the tracker's certificate",
        )
    for flag, path in (("tls_ca", tls_ca), ("tls_cert", tls_cert), ("tls_key", tls_key)):
        if path:
            _read_pem(path, flag)
    if token is not None:
        check_token_shape(token)
    tls = ClientTls(tls_ca, tls_cert or None, tls_key or None, tls_server_name or None) if tls_ca else None
    return ClientSecurity(tls, token or None)


def call_metadata(security: ClientSecurity) -> list[tuple[str, str | bytes]]:
    """The metadata every call starts with: the token, when there is one."""
    return [(AUTHORIZATION_HEADER, f"Bearer {security.token}")] if security.token else []


def grpc_channel(address: str, security: ClientSecurity) -> grpc.Channel:
    """A channel to a farm's gRPC port with CHANNEL_OPTIONS, TLS when `security` has it."""
    if not security.tls:
        return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    t = security.tls
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read_pem(t.ca_file, "TLS CA"),
        private_key=_read_pem(t.key_file, "TLS key") if t.key_file else None,
        certificate_chain=_read_pem(t.cert_file, "TLS certificate") if t.cert_file else None,
    )
    options = list(CHANNEL_OPTIONS)
    if t.server_name:
        options += [("grpc.ssl_target_name_override", t.server_name), ("grpc.default_authority", t.server_name)]
    return grpc.secure_channel(address, credentials, options=options)


def _ssl_context(tls: ClientTls) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=_read_pem(tls.ca_file, "TLS CA").decode())
    if tls.cert_file and tls.key_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    return ctx


def connect_socket(host: str, port: int, security: ClientSecurity, timeout_s: float, what: str, first: bytes) -> socket.socket:
    """A TCP (or TLS) connection to `what` at host:port with `first` sent at once.
    The socket is left with `timeout_s` as its timeout, for the handshake that
    follows; UNAVAILABLE naming `what` when it cannot be reached."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.timeout:
        raise FarmError("UNAVAILABLE", f"{what} at {host}:{port} did not answer within {round(timeout_s * 1000)} ms") from None
    except OSError as err:
        raise FarmError("UNAVAILABLE", f"cannot reach {what} at {host}:{port}: {err.strerror or err}") from err
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if security.tls:
            name = security.tls.server_name or host
            sock = _ssl_context(security.tls).wrap_socket(sock, server_hostname=name)
        sock.sendall(first)
    except (OSError, ssl.SSLError) as err:
        sock.close()
        raise FarmError("UNAVAILABLE", f"cannot reach {what} at {host}:{port}: {err}") from err
    return sock


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def diagnose_transport(host: str, port: int, used_tls: bool, timeout_s: float = 2.0) -> Optional[str]:
    """Why a client could not talk to host:port when the reason is TLS on one side
    only (runtime/credentials.ts diagnoseTransport); None when that is not it."""
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    address = f"{host}:{port}"
    try:
        with ctx.wrap_socket(raw, server_hostname=None if _is_ip(host) else host):
            speaks_tls = True
    except ssl.SSLError as err:
        # A TLS alert (a mutual-TLS server that wants a certificate) is still TLS.
        speaks_tls = bool(re.search(r"alert|certificate|handshake failure", str(err), re.I))
    except (ConnectionResetError, BrokenPipeError):
        speaks_tls = False  # it hung up on a TLS hello
    except OSError:
        return None
    finally:
        raw.close()
    if speaks_tls and not used_tls:
        return f"{address} speaks TLS and this client spoke plaintext: pass tls_ca (the farm's ca.crt) to connect"
    if not speaks_tls and used_tls:
        return (
            f"{address} does not speak TLS (it answered a TLS hello with something else): "
            "drop tls_ca, or start that server with --tls-cert and --tls-key"
        )
    return None


def env_security(
    token: Optional[str], tls_ca: Optional[str], tls_cert: Optional[str], tls_key: Optional[str], tls_server_name: Optional[str]
) -> ClientSecurity:
    """The arguments, with the TypeScript SDK's environment defaults: $KFARM_TOKEN,
    and $KFARM_TLS_CA (with $KFARM_TLS_CERT, $KFARM_TLS_KEY) when no tls_ca is given."""
    env = os.environ
    if tls_ca is None and env.get("KFARM_TLS_CA"):
        tls_ca, tls_cert, tls_key = env["KFARM_TLS_CA"], env.get("KFARM_TLS_CERT") or None, env.get("KFARM_TLS_KEY") or None
    return client_security(tls_ca, tls_cert, tls_key, tls_server_name, token if token is not None else (env.get("KFARM_TOKEN") or None))
