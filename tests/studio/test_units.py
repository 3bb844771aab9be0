"""Pure pieces: the SVG chart, launch option parsing, listing filters."""

from __future__ import annotations

import pytest

from tests.studio.html import parse
from webui.studio.charts import MAX_POINTS, reward_chart
from webui.studio.episode_views import parse_listing
from webui.studio.launch_options import read_launch_form
from webui.templating import environment, format_number


def test_chart_is_wellformed_svg_with_return_line() -> None:
    svg = parse(str(reward_chart([None, 1.0, -0.5, 2.0], current=2)))
    root = svg.find("svg")
    assert root.attrs["data-points"] == "4"
    assert len(root.find_all("rect")) == 3
    points = root.find("polyline").attrs["points"].split()
    assert len(points) == 4
    assert root.find("line", class_="cursor") is not None
    assert "return 2.5 after 3 steps" in root.find("title").text()


@pytest.mark.parametrize(("value", "shown"), [
    (30000.0, "30000"), (30000, "30000"), (1.7000000000000002, "1.7"), (12345.678, "12346"), (0.1234567, "0.1235"),
    (-2.5, "-2.5"), (0.0, "0"), (None, "—"), (1e20, "1e+20"), (-4e-05, "-4e-05"),
])
def test_one_number_format(value: object, shown: str) -> None:
    assert format_number(value) == shown


def test_chart_and_tables_show_large_returns_whole() -> None:
    svg = parse(str(reward_chart([None, 10000.0, 20000.0]))).find("svg")
    assert svg.find("title").text() == "return 30000 after 2 steps"
    assert "3e+04" not in str(reward_chart([None, 10000.0, 20000.0]))
    assert environment().from_string("{{ v|num }}").render(v=30000.0) == "30000"


def test_chart_downsamples_long_episodes() -> None:
    rewards = [None] + [float(i % 7) for i in range(10_000)]
    root = parse(str(reward_chart(rewards))).find("svg")
    assert len(root.find("polyline").attrs["points"].split()) == MAX_POINTS
    assert len(root.find_all("rect")) <= MAX_POINTS


def test_chart_without_rewards() -> None:
    assert "No rewards" in str(reward_chart([]))
    assert "No rewards" in str(reward_chart([None, None]))
    assert "<svg" in str(reward_chart([0.0, 0.0]))


def test_launch_options_are_structured() -> None:
    form = read_launch_form("docker", {"port": "8100", "env_vars": "A=1\n# note\nB = two=2\n", "memory": "512M",
                                       "cpus": "1.5", "pids_limit": "64", "replicas": "3"}, ("process", "docker"))
    assert form.ok
    assert form.options == {"port": 8100, "env_vars": {"A": "1", "B": " two=2"}, "memory": "512m",
                            "cpus": 1.5, "pids_limit": 64}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("port", "0", "between"), ("port", "x", "whole number"), ("env_vars", "1BAD=x", "NAME=value"),
     ("memory", "lots", "like 512m"), ("cpus", "-1", "positive"), ("cpus", "many", "a number"),
     ("replicas", "100", "between")],
)
def test_launch_option_errors(field: str, value: str, message: str) -> None:
    form = read_launch_form("swarm" if field == "replicas" else "docker", {field: value}, ("docker", "swarm"))
    assert not form.ok and message in form.errors[field]


def test_unknown_provider_is_a_field_error() -> None:
    form = read_launch_form("k8s", {}, ("process",))
    assert form.errors == {"provider": "choose one of: process"}


def test_listing_query_parsing() -> None:
    q = parse_listing({"env": "echo", "finished": "no", "min_return": "1.5", "since": "2026-01-02", "cursor": "c"})
    assert q.filters.env == "echo" and q.filters.finished is False and q.filters.min_return == 1.5
    assert q.filters.since == 1767312000.0 and q.cursor == "c" and not q.errors
    assert q.query_string(cursor="n") == "env=echo&since=2026-01-02&min_return=1.5&finished=no&cursor=n"
    assert parse_listing({"until": "soon"}).errors == {"until": "a date like 2026-01-31"}


def test_isolated_container_option() -> None:
    form = read_launch_form("docker", {"isolated": "on", "memory": "1g"}, ("docker",))
    assert form.ok and form.options == {"memory": "1g", "network": False}
    form = read_launch_form("docker", {"isolated": "on", "port": "8100"}, ("docker",))
    assert "cannot publish a port" in form.errors["isolated"]
    assert "network" not in read_launch_form("docker", {}, ("docker",)).options
