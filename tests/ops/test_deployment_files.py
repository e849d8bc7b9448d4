"""The deployment files (ops/systemd, ops/container, ops/prometheus, .env.example) name only
commands, flags and settings that exist: every command line they run parses with the real
``sabot`` parser (so ``sabot serve --help`` knows each flag), every ``SABOT_*`` variable they set
is a setting ``services/settings.py`` reads, every setting is documented in ``.env.example``,
and every series an alert uses is one ``services/metrics.py`` serves.

No container engine runs here: the image and the compose file are checked as text, not built.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from services import metrics
from services.cli import OLD_NAMES, CliError, Commands, build_parser
from services.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
SABOT = "/opt/sabot/venv/bin/sabot"
VARIABLES = {s.variable: s for s in SETTINGS if s.variable}
ALIASES = {a: s for s in SETTINGS for a in s.aliases}
# Settings no command reads yet (none: issue 15 wired SABOT_METRICS_LISTEN into sabot serve).
NOT_READ_YET: set[str] = set()
# Variables of other programs that the files set on purpose.
OTHERS = {"PGPASSFILE", "POSTGRES_USER", "POSTGRES_PASSWORD_FILE", "PATH",
          "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PIP_NO_CACHE_DIR",
          "PIP_DISABLE_PIP_VERSION_CHECK"}
SAMPLE = {"SABOT_STORE": "postgresql://sabot_server@db:5432/sabot"}


def parses(argv: list[str]) -> None:
    """The sabot command line parses (every flag known, every value where a flag wants one), by
    its current names: no old name of a command (``OLD_NAMES``, hidden aliases for one release)
    nor of a flag (hidden)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except (CliError, SystemExit) as exc:
        pytest.fail(f"`sabot {shlex.join(argv)}` does not parse: {exc}")
    assert getattr(args, "func", None) is not None, f"sabot {shlex.join(argv)}: no command"
    command, rest = current_command(parser, argv)
    old = old_flags(command, rest)
    assert not old, f"`sabot {shlex.join(argv)}`: {', '.join(old)}: an old flag, hidden"


def old_flags(command: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """The flags among ``words`` that ``command`` hides (the previous release's spellings)."""
    hidden = {option for action in command._actions if action.help == argparse.SUPPRESS
              for option in action.option_strings}
    return sorted({w.split("=", 1)[0] for w in words if w.startswith("-")} & hidden)


def current_command(parser: argparse.ArgumentParser, argv: list[str]
                    ) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the command ``argv`` names, and the arguments after its name; a failure if
    a name on the way is an old one (a hidden alias: ``OLD_NAMES``) or no command."""
    rest = list(argv)
    path: list[str] = []
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                   None)
        if sub is None:
            return parser, rest
        assert rest, f"`sabot {' '.join(path)}`: a group, not a command"
        name = rest.pop(0)
        said = " ".join([*path, name])
        assert name in sub.choices, f"`sabot {said}`: no such command"
        assert name in Commands.visible(sub), (  # type: ignore[arg-type]
            f"`sabot {said}` is an old name (OLD_NAMES): use `sabot {OLD_NAMES.get(said, '?')}`")
        parser = sub.choices[name]
        path.append(name)


def expand(text: str) -> str:
    """systemd's ${VAR} and specifiers, as the unit would have them."""
    text = text.replace("%d", "/run/credentials/unit.service")
    return re.sub(r"\$\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "/x/" + m.group(1)), text)


def check_setting(name: str, where: str) -> None:
    if not name.startswith("SABOT_"):
        assert name in OTHERS, f"{where}: {name} is not a setting nor a known variable"
        return
    setting = VARIABLES.get(name) or ALIASES.get(name)
    assert setting is not None, f"{where}: {name} is no setting of services/settings.py"
    assert name not in ALIASES, f"{where}: {name} is an old name; use {setting.variable}"
    if name not in NOT_READ_YET:
        assert setting.read_by, f"{where}: {name} is read by no command"


# --- systemd -----------------------------------------------------------------------------------


def unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections.setdefault(current, [])
            continue
        key, _, value = line.partition("=")
        sections[current].append((key.strip(), value.strip()))
    return sections


UNITS = sorted((OPS / "systemd").glob("*.service"))


def test_there_is_a_unit_for_the_server_and_the_projection_runner() -> None:
    names = {p.name for p in UNITS}
    assert {"sabot.service", "sabot-projections.service"} <= names


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_each_unit_runs_a_sabot_command_that_exists(path: Path) -> None:
    sections = unit(path)
    service = dict(sections["Service"])
    assert sections["Unit"] and sections["Install"]
    assert service["User"] == "sabot" and service["Restart"] in ("on-failure", "always")
    argv = shlex.split(expand(service["ExecStart"]))
    assert argv[0] == SABOT, argv
    parses(argv[1:])
    for key, value in sections["Service"]:
        if key == "Environment":
            name = value.split("=", 1)[0]
            check_setting(name, f"{path.name} Environment=")
    for name in re.findall(r"\$\{(\w+)\}", service["ExecStart"]):
        check_setting(name, f"{path.name} ExecStart")
        assert re.search(rf"^{name}=", (ROOT / ".env.example").read_text(), re.M), (
            f"{path.name} expands ${{{name}}}, which .env.example does not set")


def test_the_server_unit_restarts_it_and_stops_it_gracefully() -> None:
    service = dict(unit(OPS / "systemd" / "sabot.service")["Service"])
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    assert service["ExecReload"].endswith("-HUP $MAINPID")  # SIGHUP: reload the credentials
    credentials = [v.split(":", 1)[0] for k, v in unit(OPS / "systemd" / "sabot.service")
                   ["Service"] if k == "LoadCredential"]
    assert {"seal.key", "chain.key", "checkpoint.key"} <= set(credentials)
    env = (ROOT / ".env.example").read_text()
    for name in credentials:  # .env.example points each key at where LoadCredential puts it
        assert f"/run/credentials/sabot.service/{name}" in env


# --- .env.example ------------------------------------------------------------------------------

ENV_LINE = re.compile(r"^#?(SABOT_[A-Z0-9_]+)=(.*)$")


def env_example() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_every_key_of_env_example_is_a_setting_that_is_read() -> None:
    for name in env_example():
        check_setting(name, ".env.example")


def test_every_setting_is_documented_in_env_example() -> None:
    documented = env_example()
    missing = sorted(v for v in VARIABLES if v not in documented)
    assert not missing, f".env.example lacks {missing}"


def test_env_example_holds_no_secret() -> None:
    """Keys are paths in it, the store URL has no password, no token is set."""
    for name, value in env_example().items():
        setting = VARIABLES[name]
        if setting.secret and value:
            if name in ("SABOT_STORE", "SABOT_READ_STORE"):
                rest = value.split("://", 1)[1]
                user = rest.rsplit("@", 1)[0] if "@" in rest else ""
                assert ":" not in user, f"a password in {name}"
            elif name == "SABOT_TOKENS":
                assert value.startswith("sha256:"), "a clear token in .env.example"
            else:
                assert value.startswith("/"), f"{name}: a key must be given as a file's path"


MENTION = re.compile(r"`sabot ([^`]+)`")


def test_env_example_names_the_commands_by_their_current_names() -> None:
    """The commands ``.env.example`` tells of (in backquotes, as `sabot keys chain --out NAME`)
    are commands, by their current names, and no old name is said without them either."""
    text = (ROOT / ".env.example").read_text()
    mentions = MENTION.findall(text)
    assert len(mentions) >= 5, mentions
    parser = build_parser()
    for mention in mentions:
        words = mention.split()
        names = list(itertools.takewhile(lambda w: not w.startswith("-"), words))
        command, _ = current_command(parser, names)
        assert not old_flags(command, words), f".env.example: `sabot {mention}`: an old flag"
    for match in re.finditer(r"\bsabot ([a-z][a-z-]*)", text):
        assert match.group(1) not in OLD_NAMES, f".env.example: `{match.group(0)}`, an old name"


# --- the container image and the compose file ----------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    text = (OPS / "container" / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_the_image_runs_sabot_serve_as_an_unprivileged_user() -> None:
    instructions = dockerfile()
    last = {k: v for k, v in instructions}
    entry, cmd = json.loads(last["ENTRYPOINT"]), json.loads(last["CMD"])
    assert entry == ["sabot"]
    parses(cmd)
    assert cmd[0] == "serve"
    assert last["USER"] == "sabot"
    for word, rest in instructions:
        if word == "COPY" and not rest.startswith("--from"):
            *sources, _ = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"Dockerfile: COPY {source}: no such path"
        if word == "ENV":
            for name in re.findall(r"(\w+)=", rest):
                check_setting(name, "Dockerfile ENV")
    health = last["HEALTHCHECK"]
    assert "/health" in health and "9464" in health  # the metrics endpoint's health probe
    assert any("SABOT_METRICS_LISTEN=0.0.0.0:9464" in v for k, v in instructions if k == "ENV")


def test_the_compose_file_runs_the_same_commands_with_settings_that_exist() -> None:
    compose = yaml.safe_load((OPS / "container" / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "schema", "sabot"} <= set(services)
    ours = [s for s in services.values() if s.get("image") == "sabot:latest"]
    assert len(ours) >= 2
    build = ours[0]["build"]
    assert (OPS / "container" / build["context"] / build["dockerfile"]).resolve() == (
        OPS / "container" / "Dockerfile").resolve()
    secrets_script = (OPS / "container" / "secrets.sh").read_text()
    for name, service in services.items():
        for variable in service.get("environment", {}):
            check_setting(variable, f"compose.yaml {name}")
        if service.get("image") == "sabot:latest":
            parses([str(a) for a in service["command"]])
        for secret in service.get("secrets", ()):
            assert secret in compose["secrets"], f"compose.yaml {name}: secret {secret}?"
    assert services["sabot"]["command"][0] == "serve"
    assert services["schema"]["command"][:2] == ["store", "init"]
    for secret in compose["secrets"].values():  # secrets.sh writes every secret file
        relative = secret["file"].removeprefix("./")
        assert relative in secrets_script, f"secrets.sh does not write {relative}"
    for line in secrets_script.splitlines():  # and runs only sabot commands that exist
        match = re.match(r"\s*(?:\[.*\] \|\| )?run (.+)$", line)
        if match and not line.strip().startswith("run()"):
            parses(shlex.split(match.group(1)))


# --- Prometheus --------------------------------------------------------------------------------

SERIES = re.compile(r"\b(sabot_[a-z0-9_]+)")


def _series(name: str) -> str:
    for suffix in ("_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name[: -len(suffix)] in metrics.SERIES:
            return name[: -len(suffix)]
    return name


def test_every_alert_uses_series_the_server_serves_and_has_a_runbook_entry() -> None:
    rules = yaml.safe_load((OPS / "prometheus" / "alerts.yml").read_text())
    runbook = (ROOT / "docs" / "operations.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", runbook, re.M)}
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    names = {a["alert"] for a in alerts}
    assert {"SabotStoreDown", "SabotReadModelsLagging", "SabotNotaryLagging",
            "SabotNoCheckpoint"} <= names
    for alert in alerts:
        for name in SERIES.findall(alert["expr"]):
            assert _series(name) in metrics.SERIES, f"{alert['alert']}: no series {name}"
        anchor = alert["annotations"]["runbook"].split("#", 1)[1]
        assert anchor in anchors, f"{alert['alert']}: docs/operations.md has no #{anchor}"
    config = yaml.safe_load((OPS / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    assert config["scrape_configs"][0]["metrics_path"] == "/metrics"


# What promtool's "check rules" and "check config" check that Python can check too, so that the
# files are checked where promtool is not installed (`make promtool` brings it; CI runs it).
DURATION = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
RULE_KEYS = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
SEVERITIES = {"page", "warn"}


def _balanced(text: str) -> bool:
    """Brackets nest and close and quotes close (outside quoted strings)."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack and not quote


def test_the_alert_rules_are_well_formed_without_promtool() -> None:
    """Every group has a unique name and rules; every alert a unique name, an expression with
    balanced brackets naming only series the server serves, a valid ``for`` (none: it fires at
    once), a severity label, and a summary and a runbook annotation whose templates close."""
    rules = yaml.safe_load((OPS / "prometheus" / "alerts.yml").read_text())
    assert set(rules) == {"groups"} and rules["groups"], "alerts.yml: groups"
    groups = [g["name"] for g in rules["groups"]]
    assert len(groups) == len(set(groups)), f"alerts.yml: a group name twice: {groups}"
    seen: set[str] = set()
    for group in rules["groups"]:
        assert set(group) <= {"name", "interval", "limit", "rules"}, group.keys()
        assert group["rules"], f"group {group['name']}: no rules"
        for rule in group["rules"]:
            name = rule.get("alert")
            assert isinstance(name, str) and LABEL_NAME.match(name), f"not an alert: {rule}"
            assert name not in seen, f"alert {name} twice"
            seen.add(name)
            assert set(rule) <= RULE_KEYS, f"{name}: unknown keys {set(rule) - RULE_KEYS}"
            expr = rule["expr"]
            assert isinstance(expr, str) and expr.strip(), f"{name}: no expr"
            assert _balanced(expr), f"{name}: unbalanced expr {expr!r}"
            for series in SERIES.findall(expr):
                assert _series(series) in metrics.SERIES, f"{name}: no series {series}"
            if "for" in rule:
                assert DURATION.match(str(rule["for"])), f"{name}: for {rule['for']!r}"
            labels, annotations = rule["labels"], rule["annotations"]
            assert isinstance(labels, dict) and isinstance(annotations, dict), name
            for key, value in {**labels, **annotations}.items():
                assert LABEL_NAME.match(key) and isinstance(value, str), f"{name}: {key}"
            assert labels["severity"] in SEVERITIES, f"{name}: severity {labels['severity']}"
            assert {"summary", "runbook"} <= set(annotations), f"{name}: annotations"
            for text in annotations.values():
                assert text.count("{{") == text.count("}}"), f"{name}: template {text!r}"
    config = yaml.safe_load((OPS / "prometheus" / "prometheus.yml").read_text())
    for rule_file in config["rule_files"]:
        assert (OPS / "prometheus" / rule_file).is_file(), rule_file
    for interval in config["global"].values():
        assert DURATION.match(str(interval)), interval
    for job in config["scrape_configs"]:
        assert LABEL_NAME.match(job["job_name"]), job["job_name"]
        for static in job["static_configs"]:
            for target in static["targets"]:
                host, _, port = target.rpartition(":")
                assert host and port.isdigit(), f"target {target!r}: not host:port"


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed (make promtool); the structural check ran")
def test_promtool_accepts_the_config_and_the_rules() -> None:
    for args in (["check", "config", "prometheus.yml"], ["check", "rules", "alerts.yml"]):
        done = subprocess.run(["promtool", *args], cwd=OPS / "prometheus",
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_runbook_lists_every_series() -> None:
    runbook = (ROOT / "docs" / "operations.md").read_text()
    missing = [name for name in metrics.SERIES if f"`{name}`" not in runbook]
    assert not missing, f"docs/operations.md does not explain {missing}"


# --- the metrics address, the same everywhere ----------------------------------------------------


def _metrics_port(text: str, where: str) -> int:
    from services.metrics import split_address

    try:
        return split_address(text)[1]
    except ValueError:
        pytest.fail(f"{where}: SABOT_METRICS_LISTEN={text!r} is not HOST:PORT")


def test_sabot_serve_reads_the_metrics_address_from_its_flag_its_variable_and_its_file(
        tmp_path: Path) -> None:
    """``--metrics-listen`` is a serve flag; SABOT_METRICS_LISTEN is read by serve, from the
    environment or the env file (.env.example's value, as the unit's EnvironmentFile gives
    it), the flag first."""
    from services.cli.server import _metrics_listen

    parses(["serve", "--metrics-listen", "127.0.0.1:9464"])
    assert "serve" in VARIABLES["SABOT_METRICS_LISTEN"].read_by
    parser = build_parser()
    help_text = parser._subparsers._group_actions[0].choices["serve"].format_help()  # type: ignore[union-attr]
    assert "--metrics-listen" in help_text and "SABOT_METRICS_LISTEN" in help_text
    example = ROOT / ".env.example"
    args = parser.parse_args(["serve", "--env-file", str(example)])
    assert _metrics_listen(args) == (env_example()["SABOT_METRICS_LISTEN"], 5.0)
    args = parser.parse_args(["serve", "--env-file", str(example),
                              "--metrics-listen", "127.0.0.1:9999"])
    assert _metrics_listen(args)[0] == "127.0.0.1:9999"
    args = parser.parse_args(["serve", "--env-file", str(tmp_path / "none.env")])
    assert _metrics_listen(args) == (None, 5.0)  # off unless given; the bound's default
    args = parser.parse_args(["serve", "--env-file", str(tmp_path / "none.env"),
                              "--store-timeout", "1.5"])
    assert _metrics_listen(args) == (None, 1.5)


def test_every_file_serves_and_probes_the_metrics_on_one_port() -> None:
    """.env.example, the image, the compose file, the scrape config and the runbook's HAProxy
    probe agree on the metrics port; the unit serves what its env file says."""
    port = _metrics_port(env_example()["SABOT_METRICS_LISTEN"], ".env.example")
    instructions = dockerfile()
    for word, rest in instructions:
        if word == "ENV" and "SABOT_METRICS_LISTEN=" in rest:
            value = rest.split("SABOT_METRICS_LISTEN=", 1)[1].split()[0]
            assert _metrics_port(value, "Dockerfile") == port
        if word == "EXPOSE":
            assert str(port) in rest.split(), "Dockerfile: the metrics port is not exposed"
    assert f":{port}/health" in dict(instructions)["HEALTHCHECK"]
    compose = yaml.safe_load((OPS / "container" / "compose.yaml").read_text())
    sabot_service = compose["services"]["sabot"]
    assert _metrics_port(sabot_service["environment"]["SABOT_METRICS_LISTEN"],
                         "compose.yaml") == port
    assert any(str(p).endswith(f":{port}") for p in sabot_service.get("ports", ()))
    config = yaml.safe_load((OPS / "prometheus" / "prometheus.yml").read_text())
    targets = [t for job in config["scrape_configs"] for c in job.get("static_configs", ())
               for t in c["targets"]]
    assert targets and all(t.endswith(f":{port}") for t in targets), targets
    assert f"check port {port}" in (ROOT / "docs" / "operations.md").read_text()
    service = dict(unit(OPS / "systemd" / "sabot.service")["Service"])
    assert "--env-file /etc/sabot/sabot.env" in service["ExecStart"]
    assert service["EnvironmentFile"] == "/etc/sabot/sabot.env"
