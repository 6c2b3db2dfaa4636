"""A third-party plugin adding what the core lets plugins add by name: a launcher with its own
command-line option, an optimizer and a learning-rate schedule."""

from ddpx.api import LauncherSpec, LaunchOption, LaunchOutcome, OptimizerSpec, ScheduleSpec, hookimpl


def _launch(job):
    """Starts no rank: writes its option's value into the run folder and hands the job over."""
    (job.run_dir.path / "greeting.txt").write_text(job.launch.launcher_options["greeting"], encoding="utf-8")
    return LaunchOutcome(0, detached=True)


@hookimpl
def register_launchers(register):
    register(
        LauncherSpec(
            "greeter",
            "writes its --greeting into the run folder; starts no rank",
            _launch,
            options=(LaunchOption("greeting", "What the greeter writes.", default="hello"),),
            detaches=lambda job: True,
        )
    )


def _half_lr_sgd(parameters, train):
    import torch

    return torch.optim.SGD(parameters, lr=train["lr"] / 2)


def _halve_each_step(optimizer, train, total_steps):
    import torch

    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)


@hookimpl
def register_optimizers(register):
    register(OptimizerSpec("half_lr_sgd", "SGD at half of train.lr", _half_lr_sgd))


@hookimpl
def register_schedules(register):
    register(ScheduleSpec("halve_each_step", "halve the rate after every step", _halve_each_step))
