"""What ``ddpx plugins`` reports: each plugin's origin, hooks and registered names."""

from __future__ import annotations

from typing import Any

from ddpx.contract.errors import PluginError
from ddpx.contract.specs import KINDS
from ddpx.plugin_host.registry import Registry


def plugin_report(registry: Registry) -> dict[str, Any]:
    pm = registry.pm
    registers: dict[str, dict[str, list[str]]] = {name: {} for name in pm.info}
    errors = [{"name": e.name, "distribution": e.distribution, "message": e.message} for e in pm.load_errors]
    for kind in KINDS:
        try:
            components = registry.all(kind)
        except PluginError as exc:
            errors.append({"name": None, "distribution": None, "message": exc.message})
            continue
        for name in sorted(components):
            registers.setdefault(registry.owner(kind, name), {}).setdefault(kind, []).append(name)
    plugins = []
    for name, info in sorted(pm.info.items()):
        plugin = pm.get_plugin(name)
        hooks = sorted(caller.name for caller in (pm.get_hookcallers(plugin) or []))
        plugins.append(
            {
                "name": name,
                "module": info.module,
                "distribution": info.distribution,
                "version": info.version,
                "source": info.source,
                "hooks": hooks,
                "registers": registers.get(name, {}),
            }
        )
    return {"plugins": plugins, "errors": errors}
