"""The Kubernetes manifests of docs/kubernetes.md, checked without a cluster.

Every YAML block of the page is an object of its ``apiVersion`` and ``kind`` with the fields
that resource requires, and every pod's ddpx command — ``$(NAME)`` expanded as Kubernetes does,
from the variables the operator adds and those the container declares — is one ddpx accepts:
parsed, resolved and planned exactly as ``ddpx recipe`` does before it launches, nothing started.
The cluster's MLflow Service is the one thing outside: a real ``mlflow server`` on loopback stands
for it, whose ``/health`` ddpx asks before a launch.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import click
import pytest
import yaml
from mlflow_server import mlflow_server

from ddpx.cli.launch_options import settings_from
from ddpx.cli.run_commands import recipe_command
from ddpx.config.recipe import resolve_recipe
from ddpx.contract.errors import UserError
from ddpx.launch.plan import plan_job
from ddpx.plugin_host.registry import load_registry

PAGE = Path(__file__).parent.parent / "docs" / "kubernetes.md"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
MANIFESTS = [
    doc for block in YAML_BLOCK.findall(PAGE.read_text(encoding="utf-8")) for doc in yaml.safe_load_all(block) if doc
]
WORKLOADS = [m for m in MANIFESTS if m["kind"] in ("TrainJob", "PyTorchJob", "JobSet")]
CLAIMS = {m["metadata"]["name"] for m in MANIFESTS if m["kind"] == "PersistentVolumeClaim"}
MLFLOW_SERVICE = "http://mlflow.mlflow.svc.cluster.local:5000"
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
REFERENCE = re.compile(r"\$\$|\$\((\w+)\)")
JOBSET_ACTIONS = {
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
}


def name_of(manifest: dict) -> str:
    return f"{manifest['kind']}-{manifest['metadata']['name']}"


# --- the resources' own fields -------------------------------------------------------------


def check_pod(pod: dict, containers: tuple[str, ...] = (), images: bool = True) -> None:
    """Named containers (with ``containers`` among them), images, mounts of declared volumes,
    claims the page creates."""
    names = [c["name"] for c in pod["containers"]]
    assert set(containers) <= set(names), f"the pod needs container(s) {containers}, has {names}"
    assert not images or all(c.get("image") for c in pod["containers"]), "a container without an image"
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in (m for c in pod["containers"] for m in c.get("volumeMounts", [])):
        assert mount["name"] in volumes and mount["mountPath"].startswith("/"), mount
    for volume in volumes.values():
        assert volume.get("persistentVolumeClaim", {}).get("claimName", "ddpx-runs") in CLAIMS, volume


def check_job(job: dict) -> None:
    """A batch/v1 Job template: a pod failure policy needs ``restartPolicy: Never`` and names a container."""
    pod = job["template"]["spec"]
    for rule in job.get("podFailurePolicy", {}).get("rules", []):
        assert pod.get("restartPolicy") == "Never", "a podFailurePolicy needs restartPolicy: Never"
        assert rule["action"] in ("FailJob", "FailIndex", "Ignore", "Count")
        codes = rule.get("onExitCodes")
        assert codes is None or codes["containerName"] in [c["name"] for c in pod["containers"]]


def check_jobset_spec(spec: dict, containers: tuple[str, ...] = ()) -> None:
    for rule in spec.get("failurePolicy", {}).get("rules", []):
        assert rule["action"] in JOBSET_ACTIONS, rule
    assert spec["replicatedJobs"], "a JobSet without replicated jobs"
    for replicated in spec["replicatedJobs"]:
        assert DNS_LABEL.fullmatch(replicated["name"]), replicated["name"]
        check_job(replicated["template"]["spec"])
        check_pod(replicated["template"]["spec"]["template"]["spec"], containers)


def check_claim(spec: dict) -> None:
    assert "ReadWriteMany" in spec["accessModes"], "every pod of a job mounts the run folders"
    assert spec["resources"]["requests"]["storage"]


def check_trainjob(spec: dict) -> None:
    assert spec["runtimeRef"]["name"]
    assert spec["runtimeRef"].get("kind", "ClusterTrainingRuntime") in ("ClusterTrainingRuntime", "TrainingRuntime")
    trainer = spec["trainer"]
    assert isinstance(trainer["numNodes"], int) and trainer["numNodes"] >= 1
    assert isinstance(trainer["numProcPerNode"], int), "ddpx's --nproc takes a number, not auto"
    assert all(isinstance(word, str) for word in trainer["command"] + trainer.get("args", []))
    for patch in spec.get("runtimePatches", []):
        assert patch["manager"]
        for replicated in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            assert replicated["name"] == "node", "the torch runtimes' trainer job is 'node'"
            check_pod(replicated["template"]["spec"]["template"]["spec"], ("node",), images=False)


def check_runtime(spec: dict) -> None:
    assert isinstance(spec["mlPolicy"]["torch"], dict), "a torch runtime (PET_* variables)"
    trainers = [
        r
        for r in spec["template"]["spec"]["replicatedJobs"]
        if r["template"]["metadata"]["labels"].get("trainer.kubeflow.org/trainjob-ancestor-step") == "trainer"
    ]
    assert [r.get("replicas", 1) for r in trainers] == [1], "one trainer job, replicas 1"
    check_jobset_spec(spec["template"]["spec"], ("node",))


def check_pytorchjob(spec: dict) -> None:
    replicas = spec["pytorchReplicaSpecs"]
    assert set(replicas) <= {"Master", "Worker"} and replicas["Master"].get("replicas", 1) == 1
    assert isinstance(spec.get("nprocPerNode", "auto"), str), "nprocPerNode is a string"
    for replica in replicas.values():
        assert replica.get("restartPolicy", "OnFailure") in ("Always", "OnFailure", "Never", "ExitCode")
        check_pod(replica["template"]["spec"], ("pytorch",))


RESOURCES = {
    "PersistentVolumeClaim": ("v1", check_claim),
    "TrainJob": ("trainer.kubeflow.org/v1alpha1", check_trainjob),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1", check_runtime),
    "PyTorchJob": ("kubeflow.org/v1", check_pytorchjob),
    "JobSet": ("jobset.x-k8s.io/v1alpha2", check_jobset_spec),
}


# --- the pods and their commands -------------------------------------------------------------


def trainjob_pods(job: dict):
    """Kubeflow Trainer's torch plugin: PET_* in the trainer container ``node`` of every pod."""
    name, trainer = job["metadata"]["name"], job["spec"]["trainer"]
    container = {**trainer, "resources": trainer.get("resourcesPerNode", {})}
    for node in range(trainer["numNodes"]):
        yield (
            node,
            container,
            {
                "PET_NNODES": trainer["numNodes"],
                "PET_NPROC_PER_NODE": trainer["numProcPerNode"],
                "PET_NODE_RANK": node,
                "PET_MASTER_ADDR": f"{name}-node-0-0.{name}",
                "PET_MASTER_PORT": 29500,
            },
        )


def pytorchjob_pods(job: dict):
    """The Training Operator: Master is node 0, Workers 1, 2, ...; the Master's Service and port."""
    name, specs = job["metadata"]["name"], job["spec"]["pytorchReplicaSpecs"]
    nodes, nproc = sum(s.get("replicas", 1) for s in specs.values()), job["spec"].get("nprocPerNode", "auto")
    master = next(c for c in specs["Master"]["template"]["spec"]["containers"] if c["name"] == "pytorch")
    port = next((p["containerPort"] for p in master.get("ports", []) if p.get("name") == "pytorchjob-port"), 23456)
    ranks = [("Master", 0)] + [("Worker", 1 + i) for i in range(specs.get("Worker", {}).get("replicas", 0))]
    for kind, node in ranks:
        container = next(c for c in specs[kind]["template"]["spec"]["containers"] if c["name"] == "pytorch")
        yield (
            node,
            container,
            {
                "MASTER_ADDR": f"{name}-master-0",
                "MASTER_PORT": port,
                "PET_MASTER_ADDR": f"{name}-master-0",
                "PET_MASTER_PORT": port,
                "PET_NNODES": nodes,
                "PET_NODE_RANK": node,
                "PET_NPROC_PER_NODE": nproc,
                "RANK": node,
                "WORLD_SIZE": nodes * int(nproc),
            },
        )


def jobset_pods(jobset: dict):
    """Indexed Jobs: each pod knows its completion index, and nothing else."""
    for replicated in jobset["spec"]["replicatedJobs"]:
        job = replicated["template"]["spec"]
        for _ in range(replicated.get("replicas", 1)):
            for node in range(job.get("parallelism", 1)):
                for container in job["template"]["spec"]["containers"]:
                    yield node, container, {"JOB_COMPLETION_INDEX": node}


PODS = {"TrainJob": trainjob_pods, "PyTorchJob": pytorchjob_pods, "JobSet": jobset_pods}


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion: ``$(NAME)`` of a known variable is its value, an unknown one stays, ``$$`` is ``$``."""
    return REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def environment(container: dict, injected: dict, node: int) -> dict[str, str]:
    """The operator's variables, then the container's own, in order (a field reference: the pod's index)."""
    env = {key: str(value) for key, value in injected.items()}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = expand(var["value"], env)
        else:
            assert var["valueFrom"]["fieldRef"]["fieldPath"] == COMPLETION_INDEX, f"cannot tell {var} here"
            env[var["name"]] = str(node)
    return env


def pod_commands(manifest: dict, mlflow_uri: str):
    """(node, argv, the pods of the job, GPUs of the pod) for every pod running ddpx."""
    pods = [pod for pod in PODS[manifest["kind"]](manifest) if pod[1].get("command", [None])[0] == "ddpx"]
    for node, container, injected in pods:
        env = environment(container, injected, node)
        argv = [
            expand(word, env).replace(MLFLOW_SERVICE, mlflow_uri)
            for word in container["command"] + container.get("args", [])
        ]
        assert not [w for w in argv if "$(" in w or "${" in w], f"unresolved in {argv} (no shell expands ${{...}})"
        yield node, argv, len(pods), int(container["resources"]["limits"]["nvidia.com/gpu"])


@functools.cache
def registry():
    return load_registry()


def planned(argv: list[str]):
    """What ``ddpx recipe`` does with ``argv`` before it launches: parse, resolve, plan (raising as it does)."""
    assert argv[:2] == ["ddpx", "recipe"], f"not a `ddpx recipe` command: {argv}"
    values = dict(recipe_command.make_context("ddpx recipe", argv[2:]).params)
    recipe = resolve_recipe(registry(), values.pop("name"), values.pop("overrides"))
    return plan_job(registry(), recipe, settings_from(registry(), values))


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory):
    """The cluster's MLflow Service as ddpx sees it before a launch: a real ``mlflow server`` on loopback."""
    with mlflow_server(tmp_path_factory.mktemp("mlflow-service")) as uri:
        yield str(uri)


# --- the tests --------------------------------------------------------------------------------


def test_the_page_has_every_kind_of_manifest():
    assert {m["kind"] for m in MANIFESTS} == set(RESOURCES)
    assert "not been run on a Kubernetes cluster" in PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("manifest", MANIFESTS, ids=name_of)
def test_each_manifest_is_a_resource_of_its_kind(manifest):
    api_version, check = RESOURCES[manifest["kind"]]
    assert manifest["apiVersion"] == api_version
    assert DNS_LABEL.fullmatch(manifest["metadata"]["name"])
    check(manifest["spec"])


@pytest.mark.parametrize("manifest", WORKLOADS, ids=name_of)
def test_every_pod_runs_a_command_ddpx_accepts(manifest, mlflow_uri):
    commands = list(pod_commands(manifest, mlflow_uri))
    assert commands, f"no pod of {name_of(manifest)} runs ddpx"
    for node, argv, nodes, gpus in commands:
        launch = planned(argv).launch
        assert (launch.launcher, launch.nnodes, launch.node_rank, launch.nproc) == ("torchrun", nodes, node, gpus)
        assert launch.resume == "auto" and launch.runs_dir.startswith("/mnt/ddpx-runs/")


MISTAKES = {  # what is changed in a pod's command, and what ddpx says
    "unknown flag": ("--nproc=", "--nproc-per-node=", "No such option"),
    "unknown recipe key": ("dataset.download=", "dataset.downlaod=", "unknown recipe key 'dataset.downlaod'"),
    "unknown recipe": ("bbbp_rnn", "bbbp_rn", "unknown recipe 'bbbp_rn'"),
    "numProcPerNode left at auto": ("--nproc=4", "--nproc=auto", "'auto' is not a valid integer"),
    "another launcher's flag": ("--resume=auto", "--partition=gpu", "--partition is an option of --launcher slurm"),
    "no rendezvous address": ("--rdzv-endpoint=", "--master-addr=", "needs --rdzv-endpoint"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_in_a_command_is_caught_before_launch(mistake, mlflow_uri):
    old, new, said = MISTAKES[mistake]
    for manifest in WORKLOADS:
        _, argv, _, _ = next(pod_commands(manifest, mlflow_uri))
        assert any(old in word for word in argv), f"{name_of(manifest)}: nothing to change"
        with pytest.raises((click.UsageError, UserError), match=re.escape(said)):
            planned([word.replace(old, new) for word in argv])
