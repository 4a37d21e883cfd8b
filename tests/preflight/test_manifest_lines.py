"""MANIFEST002 cites the line of the field its problem names, as the audit cites a finding's
line (issue 36, item 5: it cited the object's first line, line 1 beside the audit's 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app

TEMPLATE = """\
# a claim template
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu
  namespace: ml
spec:
  spec:
    devices:
      requests:
      - name: {name}
        {shape}:
          deviceClassName: gpu.nvidia.com
          count: 1
"""

# (the two fields, the text of the line the problem must be cited at)
CASES = [
    ({"name": "Bad_Name", "shape": "exactly"}, "      - name: Bad_Name"),
    # the request (the list item) is what is wrong: its first line
    ({"name": "gpu", "shape": "neither"}, "      - name: gpu"),
]


@pytest.mark.parametrize(("fields", "line_text"), CASES)
def test_manifest002_cites_the_fields_line(fields: dict, line_text: str, tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(TEMPLATE.format(**fields))
    wanted = path.read_text().splitlines().index(line_text) + 1
    result = CliRunner().invoke(app, ["preflight", "--manifests", str(tmp_path), "-o", "json"])
    (check,) = [c for c in json.loads(result.stdout)["checks"] if c["id"] == "MANIFEST002"]
    assert check["outcome"] == "fail", check
    assert f"{path}:{wanted} ResourceClaimTemplate gpu: " in check["message"], check["message"]


# (the file's name in the tree, how the annotation names it: the runner escapes `:` and `,`)
ANNOTATED = [("claims/claim.yaml", "claims/claim.yaml"),
             ("my claims/claim.yaml", "my claims/claim.yaml"),  # left on the summary before
             ("a,b/claim.yaml", "a%2Cb/claim.yaml")]


@pytest.mark.parametrize(("name", "shown"), ANNOTATED)
def test_github_annotates_the_fields_line_of_each_file(name: str, shown: str,
                                                       tmp_path: Path) -> None:
    """`-o github` puts MANIFEST002's problem on its file's line, read from the record (the
    detail's Location), whatever the file is named."""
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_text(TEMPLATE.format(name="Bad_Name", shape="exactly"))
    wanted = path.read_text().splitlines().index("      - name: Bad_Name") + 1
    result = CliRunner().invoke(app, ["preflight", "--manifests", str(tmp_path), "-o", "github"])
    lines = [line for line in result.stdout.splitlines() if "MANIFEST002" in line]
    assert len(lines) == 1, result.stdout
    assert f"/{shown},line={wanted},title=MANIFEST002 " in lines[0], lines[0]
    assert lines[0].split("::", 2)[2].startswith("ResourceClaimTemplate gpu: "), lines[0]
