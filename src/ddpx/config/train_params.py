"""The core's recipe keys: every ``train.*`` key, and the keys that name a recipe's parts.

Tasks and models declare their own ``dataset.*`` and ``model.*`` keys the same way, with
:class:`~ddpx.contract.records.Param`.
"""

from __future__ import annotations

from ddpx.contract.errors import UserError
from ddpx.contract.outputs import ensemble_answer_loss, has_variance, kind_of
from ddpx.contract.records import Param

CALIBRATIONS = ("none", "platt", "isotonic", "zscaling")

TRAIN_PARAMS: dict[str, Param] = {
    "max_epochs": Param(10, "epochs to train at most (0 evaluates the initial model)", minimum=0),
    "batch_size": Param(
        64,
        "samples per process per micro-batch (the global batch is this times the world size times train.accumulate)",
        minimum=1,
    ),
    "global_batch_size": Param(
        0,
        "samples per optimizer step over all ranks: train.batch_size per rank follows from the world size and "
        "train.accumulate, so 1 and N ranks take the same steps (0: train.batch_size per rank decides)",
        minimum=0,
    ),
    "accumulate": Param(
        1, "micro-batches per optimizer step (gradient accumulation; DDP all-reduces once per step)", minimum=1
    ),
    "clip_grad_norm": Param(
        0.0,
        "clip the gradients' total 2-norm to this before each optimizer step, and log the norm with the loss (0: off)",
        minimum=0,
    ),
    "eval_batch_size": Param(512, "samples per process per step when evaluating", minimum=1),
    "lr": Param(0.1, "learning rate", above=0),
    "weight_decay": Param(0.0, "weight decay", minimum=0),
    "momentum": Param(0.0, "momentum (sgd only)", minimum=0, below=1),
    "optimizer": Param(
        "sgd", "optimizer (a registered optimizer: sgd, adam, adamw, or a plugin's)", registry="optimizers"
    ),
    "seed": Param(0, "seed for data splits, initial weights and shuffling", minimum=0, maximum=2**32 - 1),
    "ensemble_size": Param(
        1,
        "train this many models that differ only by seed (member i: initial weights and shuffling from "
        "train.seed + i; the splits from train.seed), one after another on all ranks, each kept at its best "
        "dev epoch; the run's model answers with their mean and its spread across members, a regression's "
        "spread squared as its variance (1: one model)",
        minimum=1,
    ),
    "select_by": Param(
        "metric",
        "which epoch's weights the run keeps (and what train.patience waits for): metric, "
        "the best dev metric (ties: the lower dev loss), or loss, the lowest dev loss (ties: the better "
        "metric), as Chemprop's default and Lightning's val_loss checkpoints choose",
        choices=("metric", "loss"),
    ),
    "patience": Param(3, "stop after this many epochs without dev improvement (0: never stop early)", minimum=0),
    "calibration": Param(
        "none",
        "a calibrator fitted on the dev split after training and saved with the model: platt or isotonic "
        "for the probabilities of 0/1 labels, zscaling for a regression model's variance (model.uncertainty=mve or "
        "evidential, or a regression ensemble's, train.ensemble_size above 1: its members' spread squared); "
        "none: the model's own answers (the conformal intervals and sets are fitted on dev either way)",
        choices=CALIBRATIONS,
    ),
    "precision": Param(
        "fp32",
        "fp32 (or 32), or bf16 / fp16 mixed precision with torch.autocast (fp16 needs a GPU)",
        choices=("fp32", "32", "bf16", "fp16"),
    ),
    "lr_schedule": Param(
        "constant",
        "learning-rate schedule, stepped every optimizer step (a registered schedule: "
        "constant, step, cosine, onecycle, noam, or a plugin's)",
        registry="schedules",
    ),
    "warmup_steps": Param(0, "optimizer steps of linear warm-up to train.lr before the schedule starts", minimum=0),
    "warmup_fraction": Param(
        0.0, "warm-up as a fraction of the run's optimizer steps (instead of train.warmup_steps)", minimum=0, below=1
    ),
    "lr_decay_every": Param(30, "the step schedule: epochs between decays", minimum=1),
    "lr_decay_factor": Param(
        0.1, "the step schedule: the factor the rate is multiplied by at each decay", above=0, maximum=1
    ),
    "noam_warmup_epochs": Param(
        2, "the noam schedule: epochs of linear warm-up from train.noam_init_lr_ratio × train.lr to train.lr", minimum=0
    ),
    "noam_init_lr_ratio": Param(
        0.1, "the noam schedule: the first step's learning rate as a fraction of train.lr", above=0, maximum=1
    ),
    "noam_final_lr_ratio": Param(
        0.1,
        "the noam schedule: the learning rate at the end of the run as a fraction of "
        "train.lr (reached by exponential decay after the warm-up)",
        above=0,
        maximum=1,
    ),
    "channels_last": Param(False, "channels-last memory format for 4-D inputs (convnets)"),
    "compile": Param(False, "wrap the DDP model in torch.compile"),
    "sampler": Param("distributed", "training sampler (a registered sampler name)", registry="samplers"),
    "wrapper": Param(
        "ddp", "how the model is made data-parallel: ddp, allreduce, dp (a registered wrapper)", registry="wrappers"
    ),
    "check_sync": Param(False, "after every step, check that all ranks hold the same parameters (slow; debugging)"),
    "deterministic": Param(
        False,
        "torch's deterministic kernels (torch.use_deterministic_algorithms, warning where an op has none): a "
        "run repeats bit for bit with several threads per CPU rank, as it does with one",
    ),
    "time_phases": Param(
        False,
        "time each epoch's training phases on rank 0 (waiting for batches, forward, backward "
        "with DDP's all-reduce, optimizer step) and log their sums as batch_s, forward_s, backward_s "
        "and optimizer_s (on a GPU each phase waits for the device)",
    ),
    "profile_steps": Param(
        0,
        "trace this many optimizer steps on rank 0 with torch.profiler, after 7 steps of "
        "warm-up and within one epoch, into the run folder's profile/ (trace.json for Perfetto, "
        "ops.txt: the operators by their own time; 0: off)",
        minimum=0,
    ),
    "num_workers": Param(0, "DataLoader worker processes per rank", minimum=0),
    "stop_check_every": Param(
        0,
        "steps between checks for a stop request (SIGUSR1: checkpoint, then stop); "
        "0: about one check a second, from the measured step time",
        minimum=0,
    ),
    "drop_last": Param(
        False, "drop each epoch's last incomplete training batch (batch norm needs more than one sample)"
    ),
    "init_from": Param("", "a ddpx checkpoint whose model weights the run starts from"),
    "freeze_encoder_epochs": Param(
        0,
        "epochs at the start that leave the model's encoder as it started (pretrained weights: "
        "model.encoder_from) while the rest learns; 0: everything learns from the first step",
        minimum=0,
    ),
    "log_every_n_steps": Param(
        50,
        "log rank 0's training loss and the learning rate every N optimizer steps, "
        "over the global step (0: per epoch only)",
        minimum=0,
    ),
}

META_PARAMS: dict[str, Param] = {
    "name": Param("", "the recipe's name"),
    "description": Param("", "one line about the recipe"),
    "task": Param("", "the task (a registered task name)"),
    "model.name": Param("", "the model (a registered model name)"),
}


def check_calibration(method: str, loss: str, ensemble_size: int = 1) -> None:
    """``train.calibration`` fits what the run's model answers: what its loss makes one model
    answer, or what an ensemble of ``ensemble_size`` such members answers (a regression's with a
    variance: :func:`~ddpx.contract.outputs.ensemble_answer_loss`)."""
    kind = kind_of(loss)
    if method in ("platt", "isotonic") and kind != "binary":
        raise UserError(
            f"train.calibration={method} calibrates the probabilities of 0/1 labels, and this run's loss "
            f"'{loss}' trains a {kind} model. Use train.calibration=zscaling for a regression model that "
            "predicts a variance (model.uncertainty=mve, or an ensemble), or train.calibration=none."
        )
    if method == "zscaling" and not has_variance(ensemble_answer_loss(loss) if ensemble_size > 1 else loss):
        raise UserError(
            f"train.calibration=zscaling scales a predicted variance, and this run's loss '{loss}' trains "
            "a model that predicts none. Add model.uncertainty=mve (a variance head) for a regression task, "
            "or train an ensemble of it (train.ensemble_size=5, say: its members' spread squared is its "
            "variance); use train.calibration=platt or isotonic for 0/1 labels, or train.calibration=none."
        )
