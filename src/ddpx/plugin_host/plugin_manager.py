"""Build the ``ddpx`` plugin manager: built-in and third-party plugins, one loading path.

Plugins come from three places, in this order:

1. the ``ddpx`` entry-point group — every installed distribution, ddpx itself included;
2. ``DDPX_PLUGINS``: comma-separated importable module names, registered under their module
   name (handy for a plugin under development, and inherited by every rank of a job);
3. objects passed to :func:`build_plugin_manager` directly (tests, embedding).

``DDPX_DISABLE_PLUGINS=a,b`` skips plugins by name; ``DDPX_ONLY_PLUGINS=a,b`` loads only those.
A plugin that fails to import or does not match the hook contract is reported and skipped;
the others still load.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

import pluggy

from ddpx.contract import hookspecs
from ddpx.contract.markers import ENTRY_POINT_GROUP, PROJECT_NAME

DISABLE_ENV = "DDPX_DISABLE_PLUGINS"
ONLY_ENV = "DDPX_ONLY_PLUGINS"
EXTRA_ENV = "DDPX_PLUGINS"


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    source: str  # "entry point", "DDPX_PLUGINS" or "in-process"


@dataclass(frozen=True)
class PluginLoadError:
    """A plugin that could not be loaded, with a message that says how to get past it."""

    name: str
    distribution: str | None
    message: str


class DdpxPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers each plugin's origin and the plugins that failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.info: dict[str, PluginInfo] = {}
        self.load_errors: list[PluginLoadError] = []

    def add_plugin(self, plugin: object, info: PluginInfo) -> bool:
        """Register ``plugin``; on a contract violation record a load error and return False."""
        try:
            self.register(plugin, name=info.name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            self.load_errors.append(
                PluginLoadError(
                    info.name,
                    info.distribution,
                    f"plugin '{info.name}'{_from_distribution(info.distribution)} does not match the "
                    f"ddpx hook contract: {exc}. {_disable_hint(info.name)}",
                )
            )
            return False
        self.info[info.name] = info
        return True


def _split_env(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def _from_distribution(dist: str | None) -> str:
    return f" (distribution '{dist}')" if dist else ""


def _disable_hint(name: str) -> str:
    return f"Fix or uninstall it, or skip it with {DISABLE_ENV}={name}."


def _entry_points() -> list[metadata.EntryPoint]:
    found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    unique: dict[str, metadata.EntryPoint] = {}
    for ep in found:  # an editable install can list the same entry point twice
        unique.setdefault(ep.name, ep)
    return sorted(unique.values(), key=lambda ep: ep.name)


def build_plugin_manager(
    extra_plugins: Iterable[object] = (),
    *,
    load_entry_points: bool = True,
) -> DdpxPluginManager:
    """Return a fresh plugin manager holding every enabled plugin (no global state)."""
    pm = DdpxPluginManager()
    disabled = set(_split_env(DISABLE_ENV))
    only = set(_split_env(ONLY_ENV))

    def wanted(name: str) -> bool:
        return name not in disabled and (not only or name in only)

    if load_entry_points:
        for ep in _entry_points():
            if not wanted(ep.name):
                continue
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            try:
                plugin = ep.load()
            except Exception as exc:  # any import failure of a third-party module
                pm.load_errors.append(
                    PluginLoadError(
                        ep.name,
                        dist,
                        f"plugin '{ep.name}'{_from_distribution(dist)} failed to load "
                        f"(entry point '{ep.value}'): {type(exc).__name__}: {exc}. {_disable_hint(ep.name)}",
                    )
                )
                continue
            pm.add_plugin(plugin, PluginInfo(ep.name, ep.value, dist, version, "entry point"))

    for module_name in _split_env(EXTRA_ENV):
        if not wanted(module_name) or pm.has_plugin(module_name):
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            pm.load_errors.append(
                PluginLoadError(
                    module_name,
                    None,
                    f"plugin module '{module_name}' named in {EXTRA_ENV} failed to import: "
                    f"{type(exc).__name__}: {exc}. Check the name and PYTHONPATH, or remove it from {EXTRA_ENV}.",
                )
            )
            continue
        pm.add_plugin(module, PluginInfo(module_name, module_name, None, None, EXTRA_ENV))

    for plugin in extra_plugins:
        name = getattr(plugin, "__name__", None) or type(plugin).__name__
        if wanted(name):
            pm.add_plugin(plugin, PluginInfo(name, name, None, None, "in-process"))
    return pm
