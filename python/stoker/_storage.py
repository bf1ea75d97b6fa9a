"""storage_options: how to reach object storage, checked and completed for the engine."""

from __future__ import annotations

from typing import Any

_DEFAULTS: dict[str, Any] = {
    "region": "", "endpoint_override": "", "scheme": "", "anonymous": False,
    "access_key": "", "secret_key": "", "session_token": "", "max_attempts": 8,
    "connect_timeout": 0.0, "request_timeout": 0.0, "io_threads": 0,
}


def normalize(options: dict[str, Any] | None) -> dict[str, Any]:
    """All keys present with the engine's types; unknown keys name the ones accepted."""
    if options is None:
        return dict(_DEFAULTS)
    if not isinstance(options, dict):
        raise TypeError(f"storage_options must be a dict, got {options!r}")
    unknown = sorted(set(options) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"storage_options: unknown key(s) {', '.join(unknown)}; it takes "
                         f"{', '.join(_DEFAULTS)}")
    out = dict(_DEFAULTS)
    for key, value in options.items():
        default = _DEFAULTS[key]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
            value = float(value) if ok else value
        else:
            ok = isinstance(value, str)
        if not ok:
            raise TypeError(f"storage_options: {key} must be a {type(default).__name__}"
                            f"{' >= 0' if type(default) in (int, float) else ''}, got {value!r}")
        out[key] = value
    if out["scheme"] not in ("", "http", "https"):
        raise ValueError(f"storage_options: scheme must be 'http' or 'https', "
                         f"got {out['scheme']!r}")
    if "max_attempts" in options and out["max_attempts"] < 1:
        raise ValueError("storage_options: max_attempts must be >= 1")
    return out
