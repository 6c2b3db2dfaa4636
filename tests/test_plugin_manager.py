"""The plugin system: built-ins through entry points, in-process plugins, clashes, failures."""

import types

import pytest

from ddpx import hookimpl
from ddpx.contract.errors import PluginError
from ddpx.contract.hookspecs import hook_names
from ddpx.contract.specs import MetricSpec, TaskSpec
from ddpx.plugin_host.plugin_manager import build_plugin_manager
from ddpx.plugin_host.registry import Registry

BUILTINS = {"backends", "metrics", "samplers", "spawn", "torchrun", "mlflow", "no_tracking", "mlp_synthetic"}


def make_plugin(name, **hooks):
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def test_builtins_load_from_the_ddpx_entry_point_group():
    pm = build_plugin_manager()
    assert set(pm.info) >= BUILTINS
    assert all(pm.info[name].source == "entry point" and pm.info[name].distribution == "ddpx" for name in BUILTINS)
    registry = Registry(pm)
    assert set(registry.all("launchers")) >= {"spawn", "torchrun"}
    assert set(registry.all("backends")) >= {"nccl", "gloo"}
    assert set(registry.all("trackers")) >= {"mlflow", "none"}
    assert registry.owner("tasks", "mlp_synthetic") == "mlp_synthetic"


def test_every_hook_has_a_docstring_and_typed_signature():
    from ddpx.contract import hookspecs

    names = hook_names()
    assert {
        "register_tasks",
        "register_models",
        "register_metrics",
        "register_samplers",
        "register_backends",
        "register_launchers",
        "register_trackers",
        "register_recipes",
    } <= set(names)
    for name in names:
        fn = getattr(hookspecs, name)
        assert fn.__doc__ and len(fn.__doc__.strip()) > 40, name
        assert fn.__annotations__, name


def test_in_process_plugin_registers_a_component():
    def register_metrics(register):
        register(MetricSpec("always_one", "test metric", lambda t, o: 1.0))

    plugin = make_plugin("inproc_metrics", register_metrics=register_metrics)
    registry = Registry(build_plugin_manager([plugin]))
    assert registry.get("metrics", "always_one").compute(None, None) == 1.0
    assert registry.owner("metrics", "always_one") == "inproc_metrics"
    assert registry.pm.info["inproc_metrics"].source == "in-process"


def test_two_plugins_registering_one_name_is_an_error_naming_both():
    def register_tasks(register):
        register(TaskSpec("mlp_synthetic", "impostor", lambda r: None, loss="cross_entropy", metric="accuracy"))

    registry = Registry(build_plugin_manager([make_plugin("impostor_tasks", register_tasks=register_tasks)]))
    with pytest.raises(PluginError) as info:
        registry.all("tasks")
    message = info.value.message
    assert "'mlp_synthetic' from distribution 'ddpx'" in message
    assert "'impostor_tasks'" in message
    assert "DDPX_DISABLE_PLUGINS=impostor_tasks" in message


def test_a_hook_that_raises_names_its_plugin_and_hook():
    def register_models(register):
        raise ValueError("cannot build the model list")

    registry = Registry(build_plugin_manager([make_plugin("raising", register_models=register_models)]))
    with pytest.raises(
        PluginError, match="'raising' failed in its hook 'register_models'.*DDPX_DISABLE_PLUGINS=raising"
    ):
        registry.all("models")


def test_a_hook_with_a_wrong_signature_is_reported_and_skipped():
    def register_tasks(register, extra_argument):
        pass

    pm = build_plugin_manager([make_plugin("wrong_signature", register_tasks=register_tasks)])
    assert "wrong_signature" not in pm.info
    (error,) = [e for e in pm.load_errors if e.name == "wrong_signature"]
    assert "does not match the ddpx hook contract" in error.message and "extra_argument" in error.message
    assert "mlp_synthetic" in Registry(pm).all("tasks")  # the others still load


def test_env_plugins_disable_and_only(monkeypatch):
    monkeypatch.setenv("DDPX_PLUGINS", "ddpx_testplug_rank_params,no_such_module_xyz")
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent / "plugins"))
    monkeypatch.setenv("DDPX_DISABLE_PLUGINS", "torchrun")
    pm = build_plugin_manager()
    assert "ddpx_testplug_rank_params" in pm.info and pm.info["ddpx_testplug_rank_params"].source == "DDPX_PLUGINS"
    assert "torchrun" not in pm.info and "spawn" in pm.info
    (error,) = pm.load_errors
    assert "no_such_module_xyz" in error.message and "DDPX_PLUGINS" in error.message

    monkeypatch.delenv("DDPX_DISABLE_PLUGINS")
    monkeypatch.setenv("DDPX_ONLY_PLUGINS", "spawn,backends")
    monkeypatch.delenv("DDPX_PLUGINS")
    assert set(build_plugin_manager().info) == {"spawn", "backends"}


def test_building_a_manager_has_no_global_side_effects():
    first, second = build_plugin_manager(), build_plugin_manager()
    assert first.get_plugin("spawn") is second.get_plugin("spawn")  # the same module, registered twice
    first.unregister(name="spawn")
    assert second.has_plugin("spawn")
