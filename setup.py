"""Build hook: generate the gRPC stubs (and their .pyi) from proto/ into services/api/gen/, and
put ops/postgres/*.sql into a wheel's services/ledger/sql/.

Runs on every build, including ``pip install -e .``; the generated code is never committed.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROTO = ROOT / "proto"
GEN = ROOT / "services" / "api" / "gen"
DESCRIPTORS = "descriptors.binpb"  # every proto file of ours, with its comments
PACKAGE = "services.api.gen"
OPS_SQL = ROOT / "ops" / "postgres"


def _plugin(name: str) -> str | None:
    """The protoc plugin next to this interpreter, else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    return shutil.which(name)


def generate() -> None:
    from grpc_tools import protoc  # build requirement

    protos = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    if not protos:
        return
    if GEN.exists():
        shutil.rmtree(GEN)
    GEN.mkdir(parents=True)
    include = Path(protoc.__file__).resolve().parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO}",
        f"-I{include}",
        f"--python_out={GEN}",
        f"--grpc_python_out={GEN}",
        f"--mypy_out={GEN}",
        f"--mypy_grpc_out={GEN}",
        # the files with their comments, for server reflection (services/api/server.py)
        f"--descriptor_set_out={GEN / DESCRIPTORS}",
        "--include_source_info",
    ]
    for name in ("protoc-gen-mypy", "protoc-gen-mypy_grpc"):
        path = _plugin(name)
        if path is None:
            raise RuntimeError(f"{name} not found (install mypy-protobuf)")
        args.append(f"--plugin={name}={path}")
    if protoc.main([*args, *protos]) != 0:
        raise RuntimeError("protoc failed")
    # Make the generated modules importable as services.api.gen.sabot.v1.*.
    pattern = re.compile(r"^(from|import) sabot\.", re.MULTILINE)
    for path in GEN.rglob("*.py*"):
        text = path.read_text()
        path.write_text(pattern.sub(rf"\1 {PACKAGE}.sabot.", text))
    for directory in [GEN, *[d for d in GEN.rglob("*") if d.is_dir()]]:
        (directory / "__init__.py").touch()


class BuildPyWithProtos(build_py):
    """build_py generating the stubs first, in the source tree (editable installs see them)."""

    def run(self) -> None:
        generate()
        if not self.editable_mode:
            for path in GEN.rglob("*"):
                if path.suffix in {".py", ".pyi", ".binpb"}:
                    target = Path(self.build_lib) / path.relative_to(ROOT)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
            # The PostgreSQL guards travel inside the package (services/ledger/schema.py
            # reads them there when ops/ is not beside it, as in an installed wheel).
            sql_dir = Path(self.build_lib) / "services" / "ledger" / "sql"
            sql_dir.mkdir(parents=True, exist_ok=True)
            for path in OPS_SQL.glob("*.sql"):
                shutil.copyfile(path, sql_dir / path.name)
        super().run()


if __name__ == "__main__":  # setuptools runs this file as __main__; `make proto` imports it
    setup(cmdclass={"build_py": BuildPyWithProtos})
