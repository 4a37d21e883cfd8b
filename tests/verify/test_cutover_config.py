"""A cutover converts each wave's workloads by the config it planned them by (its RunContext's),
wherever `--output-dir` lies: a custom kind the config declares and vouches for is planned into
a wave and converted there, not left asking for nvidia.com/gpu in the folder the runbook
applies (before, the waves' conversion looked for the nearest .gpudra.yaml above --output-dir
and ignored --config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.run import invoke
from tests.verify import fleet as f

CONFIG = """\
workloads:
  - {apiVersion: example.com/v1, kind: Trainer, podSpecs: ["$.spec.template.spec"]}
vouch:
  - {kind: Trainer, apiVersion: example.com/v1, owner: ml@example.com,
     reason: the operator copies the pod template as written, expires: 2099-12-31}
"""


def trainer_fleet() -> list[dict[str, Any]]:
    trainer = {"apiVersion": "example.com/v1", "kind": "Trainer",
               "metadata": {"name": "t", "namespace": "ml"},
               "spec": {"template": {"spec": f.pod_spec(gpus=2)}}}
    return [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"), trainer]


# where the config is -> the extra arguments that make the cutover use it; --output-dir is
# outside the directory of both, so only the cutover's own config can reach the waves
PLACES = {
    "--config": ("settings/rules.yaml", ("--config", "{root}/settings/rules.yaml")),
    "nearest the --from file": ("src/.gpudra.yaml", ()),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_the_waves_are_converted_by_the_cutover_s_config(place: str, tmp_path: Path) -> None:
    where, extra = PLACES[place]
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(CONFIG, encoding="utf-8")
    source = tmp_path / "src" / "fleet.yaml"
    source.parent.mkdir(exist_ok=True)
    source.write_text(yaml.safe_dump_all(trainer_fleet()), encoding="utf-8")
    out = tmp_path / "waves" / "out"
    args = [arg.format(root=tmp_path) for arg in extra]
    run = invoke("cutover", "--from", str(source), "-o", "json", "--output-dir", str(out),
                 "--target-version", "1.36", *args)
    assert run.exit_code == 0, run.stderr
    converted = list((out).glob("wave-*/converted/replace/ml/trainer.example.com-t.yaml"))
    assert len(converted) == 1, sorted(str(p) for p in out.rglob("*"))
    trainer = yaml.safe_load(converted[0].read_text(encoding="utf-8"))
    main = trainer["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in main["resources"].get("limits", {})
    assert main["resources"]["claims"] == [{"name": "gpu", "request": "main"}]


# the config's `exclude:` globs -> the workloads in --from that the waves must still convert;
# the globs choose --from files, never the names gpudra exports a wave's workloads under
# (`<ns>/<kind>-<name>.yaml`): before, "*-test.yaml" dropped ml/llm-test and the cutover
# failed (exit 3, "convert failed")
EXCLUDES = {
    "a glob matching an exported name": (["*-test.yaml"], ["llm-test", "llm"]),
    "a glob matching an exported folder": (["ml/*"], ["llm-test"]),
    "a glob matching a kind prefix": (["deployment-*"], ["llm"]),
}


@pytest.mark.parametrize("case", sorted(EXCLUDES))
def test_the_config_s_excludes_do_not_drop_a_wave_s_workload(case: str, tmp_path: Path) -> None:
    globs, names = EXCLUDES[case]
    source = tmp_path / "src" / "fleet.yaml"
    source.parent.mkdir()
    (tmp_path / "src" / ".gpudra.yaml").write_text(yaml.safe_dump({"exclude": globs}),
                                                   encoding="utf-8")
    fleet = [f.node("a-1", 8, pool="a"), f.node("b-1", 8, pool="b"),
             *(f.deployment("ml", name, f.pod_spec(gpus=2)) for name in names)]
    source.write_text(yaml.safe_dump_all(fleet), encoding="utf-8")
    out = tmp_path / "out"
    run = invoke("cutover", "--from", str(source), "--output-dir", str(out),
                 "--target-version", "1.36")
    assert run.exit_code == 0, run.stderr
    converted = sorted(p.name for p in out.glob("wave-*/converted/replace/ml/*.yaml"))
    assert converted == sorted(f"deployment-{name}.yaml" for name in names)
