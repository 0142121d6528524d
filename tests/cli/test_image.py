"""``assay image import|build|list|inspect|rm`` and the doctor's environment rows."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app

CLI = CliRunner()


def _archive(tmp_path: Path, entries: dict[str, bytes]) -> Path:
    """A ``docker save`` archive with one layer."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "saved.tar"
    with tarfile.open(out, "w") as tar:
        for name, data in (
            ("manifest.json", json.dumps([{"Layers": ["l/layer.tar"]}]).encode()),
            ("l/layer.tar", layer.getvalue()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ASSAY_IMAGES_DIR": str(tmp_path / "images"), "COLUMNS": "200"}


def test_import_list_inspect_rm(tmp_path: Path) -> None:
    env = _env(tmp_path)
    archive = _archive(tmp_path, {"usr/bin/tool": b"x", "etc/motd": b"hi"})
    out = CLI.invoke(app, ["image", "import", str(archive), "--name", "tiny"], env=env)
    assert out.exit_code == 0, out.output
    image_id = out.output.split()[-4]
    assert len(image_id) == 64
    listed = CLI.invoke(app, ["image", "list", "--json"], env=env)
    assert [json.loads(line)["name"] for line in listed.output.splitlines()] == ["tiny"]
    assert "tiny" in CLI.invoke(app, ["image", "list"], env=env).output
    shown = json.loads(CLI.invoke(app, ["image", "inspect", "tiny"], env=env).output)
    assert shown["id"] == image_id and shown["source"] == "import:saved.tar"
    assert Path(shown["path"], "etc/motd").read_bytes() == b"hi"
    gone = CLI.invoke(app, ["image", "rm", image_id[:12]], env=env)
    assert gone.exit_code == 0 and "removed" in gone.output
    assert CLI.invoke(app, ["image", "list", "--json"], env=env).output == ""


def test_bad_input_names_the_field(tmp_path: Path) -> None:
    env = _env(tmp_path)
    evil = _archive(tmp_path, {"../escape": b"x"})
    out = CLI.invoke(app, ["image", "import", str(evil)], env=env)
    assert out.exit_code == 2 and "archive" in out.output and ".." in out.output
    missing = CLI.invoke(app, ["image", "inspect", "nope"], env=env)
    assert missing.exit_code == 2 and "no image 'nope'" in missing.output
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "x"\nsuite = "bullseye"\npackages = ["BAD NAME"]\n')
    built = CLI.invoke(app, ["image", "build", str(spec)], env=env)
    assert built.exit_code == 2 and "packages" in built.output


def test_an_import_past_the_cap_is_refused_naming_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    big = _archive(tmp_path, {"big": bytes(4096)})
    out = CLI.invoke(app, ["image", "import", str(big), "--max-bytes", "1000"], env=env)
    assert out.exit_code == 2, out.output
    assert "import cap of 1000 bytes" in " ".join(out.output.split())
    assert list((tmp_path / "images").glob("*")) == []  # nothing left behind
    fits = CLI.invoke(app, ["image", "import", str(big), "--max-bytes", "20000"], env=env)
    assert fits.exit_code == 0, fits.output


def test_every_image_command_has_help_with_an_example() -> None:
    for cmd in ("import", "build", "list", "inspect", "rm"):
        out = CLI.invoke(app, ["image", cmd, "--help"], env={"COLUMNS": "200"})
        assert out.exit_code == 0 and "Example" in out.output and "assay image" in out.output


def test_doctor_reports_the_tiers_and_images(tmp_path: Path) -> None:
    env = _env(tmp_path)
    archive = _archive(tmp_path, {"f": b"1"})
    assert CLI.invoke(app, ["image", "import", str(archive)], env=env).exit_code == 0
    out = CLI.invoke(app, ["doctor", "--json"], env=env)
    report = json.loads(out.output)
    assert set(report["gvisor"]) == {"available", "detail"}
    assert "available" in report["image_build"]
    assert [i["name"] for i in report["images"]] == ["saved"]


def test_build_says_what_it_does_without_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In CI or a pipe the spinner shows nothing: the build says what it starts and prints
    the tools' lines (issue 29: ``assay image build`` was silent for 90 s). The build itself
    (mmdebstrap, root) is replaced by one that reports two lines and fails, as a real one
    fails without a mirror."""
    from assay.cli import image as image_cli
    from assay.images import BuildError

    def build(spec: object, on_line: Any = None) -> Any:
        on_line("I: automatically chosen mode: root")
        on_line("I: downloading packages with apt...")
        raise BuildError("mmdebstrap failed (exit 1)")

    monkeypatch.setattr(image_cli, "build_image", build)
    spec = Path(__file__).resolve().parents[2] / "examples" / "images" / "py39.toml"
    result = CLI.invoke(app, ["image", "build", str(spec)], env=_env(tmp_path))
    assert result.exit_code == 3
    assert "building py39 (bullseye) with mmdebstrap" in result.output
    assert "I: downloading packages with apt..." in result.output
