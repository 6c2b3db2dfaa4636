"""The named components every plugin registered, collected from the ``register_*`` hooks.

Each plugin's implementation is called on its own with a ``register`` callback bound to that
plugin, so every name is known with its owner: a second plugin registering a taken name is an
error naming both, and a hook that raises is an error naming its plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ddpx.contract.errors import PluginError, UserError, did_you_mean
from ddpx.contract.recipe_file import recipe_name_of
from ddpx.contract.specs import KINDS, RecipeSource
from ddpx.plugin_host.plugin_manager import DdpxPluginManager, build_plugin_manager


class Registry:
    """Lazily collected components, by kind (``tasks``, ``models``, ...) and name."""

    def __init__(self, pm: DdpxPluginManager):
        self.pm = pm
        self._components: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, dict[str, str]] = {}

    def _describe(self, plugin_name: str) -> str:
        info = self.pm.info.get(plugin_name)
        dist = f" from distribution '{info.distribution}'" if info and info.distribution else ""
        return f"'{plugin_name}'{dist}"

    def _collect(self, kind: str) -> None:
        components: dict[str, Any] = {}
        owners: dict[str, str] = {}
        hook_name = f"register_{kind}"
        hook = getattr(self.pm.hook, hook_name)
        for impl in hook.get_hookimpls():  # in registration order
            plugin_name = impl.plugin_name

            def register(component: Any, _plugin: str = plugin_name) -> None:
                name = _component_name(component)
                if name in components:
                    raise PluginError(
                        f"two plugins register the {KINDS[kind]} '{name}': {self._describe(owners[name])} "
                        f"and {self._describe(_plugin)}. Uninstall one of them, or skip one with "
                        f"DDPX_DISABLE_PLUGINS={_plugin}."
                    )
                components[name] = component
                owners[name] = _plugin

            try:
                impl.function(register=register)
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {self._describe(plugin_name)} failed in its hook '{hook_name}': "
                    f"{type(exc).__name__}: {exc}. Fix the plugin, or skip it with DDPX_DISABLE_PLUGINS={plugin_name}."
                ) from exc
        self._components[kind] = components
        self._owners[kind] = owners

    def all(self, kind: str) -> dict[str, Any]:
        """Every component of ``kind``, by name."""
        if kind not in KINDS:
            raise KeyError(kind)
        if kind not in self._components:
            self._collect(kind)
        return self._components[kind]

    def owner(self, kind: str, name: str) -> str:
        """The plugin that registered ``name``."""
        self.all(kind)
        return self._owners[kind][name]

    def get(self, kind: str, name: str, *, key: str | None = None) -> Any:
        """The component ``name`` of ``kind``, or a clear error listing what there is."""
        components = self.all(kind)
        if name in components:
            return components[name]
        where = f" (set by '{key}')" if key else ""
        available = ", ".join(sorted(components)) or "none"
        raise UserError(
            f"unknown {KINDS[kind]} '{name}'{where}.{did_you_mean(name, components)} "
            f"Available: {available}. `ddpx plugins` shows which plugin provides each."
        )

    def task_of(self, config: Mapping[str, Any]) -> Any:
        """The task a resolved recipe's ``config`` names, judged by the loss and metric its
        ``dataset.*`` keys give (:meth:`TaskSpec.for_params`), trained with the loss its model's
        keys choose (:attr:`ModelSpec.loss_for`)."""
        task = self.get("tasks", config["task"]).for_params(config["dataset"])
        params = config.get("model") or {}
        model = self.get("models", params["name"]) if "name" in params else None
        if model is None or model.loss_for is None:
            return task
        return replace(task, loss=model.loss_for({k: v for k, v in params.items() if k != "name"}, task.loss))


def _component_name(component: Any) -> str:
    if isinstance(component, RecipeSource):
        return recipe_name_of(component.path)
    return component.name


def load_registry(extra_plugins: tuple[object, ...] = ()) -> Registry:
    """Build a plugin manager and wrap it in a :class:`Registry`."""
    return Registry(build_plugin_manager(extra_plugins))
