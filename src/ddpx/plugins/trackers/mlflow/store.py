"""Opening an MLflow store for ddpx: the default URI, a reachability check, bounded retries.

MLflow's HTTP client retries a silent server for minutes by default. ddpx bounds that
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` 2, ``MLFLOW_HTTP_REQUEST_TIMEOUT`` 30 s, unless the user
set them) and checks a server's ``/health`` first, so a wrong address is reported in seconds.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from ddpx.api import UserError

HEALTH_TIMEOUT_S = 5.0


class StoreUnreachable(Exception):
    """The tracking server did not answer."""


def bound_http_retries() -> None:
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def check_server(uri: str) -> None:
    """Raise :class:`StoreUnreachable` unless the MLflow server at ``uri`` answers ``/health``."""
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT_S) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise StoreUnreachable(f"the MLflow server at {uri} answered {url} with HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StoreUnreachable(f"no MLflow server answers at {uri} ({reason})") from None


def resolve_uri(uri: str | None) -> str:
    """``uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's default (``sqlite:///mlflow.db`` here)."""
    if uri:
        return uri
    import mlflow

    return mlflow.get_tracking_uri()


def existing_store(uri: str | None) -> str:
    """The URI of a store that exists and answers — for reading runs; a clear error otherwise."""
    uri = resolve_uri(uri)
    if is_http(uri):
        bound_http_retries()
        try:
            check_server(uri)
        except StoreUnreachable as exc:
            raise UserError(
                f"{exc}. Start it (`mlflow server --host 127.0.0.1 --port 5000`) or pass the right "
                "address with --tracking-uri."
            ) from None
        return uri
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///") :])
        if not path.is_file():
            raise UserError(
                f"there is no MLflow store at {uri} ({path} does not exist). Run a recipe here first, "
                "or pass the store of your runs with --tracking-uri (or MLFLOW_TRACKING_URI)."
            )
    return uri
