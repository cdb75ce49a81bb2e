"""The rivers file of a map export without Blender (simcore/formats/rivers.py): traced
from a stream grid, written as it has always been written, read back as written, and
anything that is not a rivers file refused with a message naming it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcore.analysis.channels import stream_polylines
from simcore.errors import InputFileError
from simcore.formats import rivers as fmt


def valley(rows: int = 12, cols: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """A valley draining to row 0 along column 4: (stream, surface)."""
    r, c = np.mgrid[0:rows, 0:cols]
    surface = r * 0.5 + np.abs(c - 4) * 2.0
    stream = np.where(c == 4, 0.2 + 0.05 * (rows - r), 0.0)
    return stream, surface.astype(np.float64)


def test_rivers_follow_the_channel_in_local_coordinates(tmp_path):
    stream, surface = valley()
    rivers = fmt.polylines(stream, surface, 0.25, -10.0, 5.0, 0.5, 2.0)
    lines = stream_polylines(stream, surface, 0.25, fmt.MIN_POINTS, 0.5, 2.0)
    assert len(rivers) == len(lines) >= 1
    for river, (cells, flow) in zip(rivers, lines):
        assert len(river["points"]) == len(river["flow"]) == len(cells)
        for (x, y, z), (r, c) in zip(river["points"], cells):
            assert (x, y, z) == (-10.0 + c * 0.5, 5.0 + r * 2.0, surface[r, c])
        assert river["flow"] == [round(float(f), 6) for f in flow]
    points = rivers[0]["points"]
    assert points[0][1] > points[-1][1], "source to mouth: downhill to row 0"


def test_no_channel_no_rivers(tmp_path):
    stream, surface = valley()
    assert fmt.polylines(stream * 0, surface, 0.25, 0.0, 0.0, 1.0, 1.0) == []


def test_the_file_is_written_byte_for_byte_as_before(tmp_path):
    rivers = [{"points": [[0.5, -1.0, 0.25], [1.0, -1.0, 0.125]], "flow": [0.5, 0.75]}]
    path = fmt.write(tmp_path / "wet_rivers.json", 0.5, rivers)
    assert path.read_text("utf-8") == (
        '{"threshold": 0.5, "units": "local", "rivers": [{"points": [[0.5, -1.0, 0.25], '
        '[1.0, -1.0, 0.125]], "flow": [0.5, 0.75]}]}')
    empty = fmt.write(tmp_path / "dry_rivers.json", 0.02, [])
    assert empty.read_text("utf-8") == '{"threshold": 0.02, "units": "local", "rivers": []}'


number = st.floats(-1e7, 1e7, allow_nan=False)
river = st.integers(1, 20).flatmap(lambda n: st.fixed_dictionaries({
    "points": st.lists(st.lists(number, min_size=3, max_size=3), min_size=n, max_size=n),
    "flow": st.lists(st.floats(0, 1), min_size=n, max_size=n)}))


@given(threshold=st.floats(0, 1), rivers=st.lists(river, max_size=5))
def test_a_rivers_file_round_trips(tmp_path_factory, threshold, rivers):
    path = fmt.write(tmp_path_factory.mktemp("r") / "x_rivers.json", threshold, rivers)
    assert fmt.read(path) == (threshold, rivers)


def test_traced_rivers_round_trip(tmp_path):
    stream, surface = valley()
    rivers = fmt.polylines(stream, surface, 0.25, 0.0, 0.0, 1.0, 1.0)
    path = fmt.write(tmp_path / "v_rivers.json", 0.25, rivers)
    assert fmt.read(path) == (0.25, json.loads(json.dumps(rivers)))


GOOD = {"threshold": 0.5, "units": "local",
        "rivers": [{"points": [[0, 0, 0], [1, 0, 0]], "flow": [0.5, 0.6]}]}

#: files that are not rivers files -> a word of the message
NOT_RIVERS = {
    "not JSON": ("{", "cannot read"),
    "a list": ("[]", "not a JSON object"),
    "no threshold": ({**GOOD, "threshold": None}, "'threshold'"),
    "a threshold above 1": ({**GOOD, "threshold": 2}, "'threshold'"),
    "a threshold true": ({**GOOD, "threshold": True}, "'threshold'"),
    "other units": ({**GOOD, "units": "metres"}, "'units'"),
    "rivers a dict": ({**GOOD, "rivers": {}}, "'rivers'"),
    "a river a list": ({**GOOD, "rivers": [[1, 2]]}, "river 0"),
    "flows that do not match": (
        {**GOOD, "rivers": [{"points": [[0, 0, 0]], "flow": [0.5, 0.6]}]}, "river 0"),
    "a point of two numbers": (
        {**GOOD, "rivers": [{"points": [[0, 0]], "flow": [0.5]}]}, "three finite"),
    "a point with text": (
        {**GOOD, "rivers": [{"points": [[0, 0, "z"]], "flow": [0.5]}]}, "three finite"),
    "an infinite point": (
        {**GOOD, "rivers": [{"points": [[0, 0, 1e999]], "flow": [0.5]}]}, "three finite"),
    "a flow null": ({**GOOD, "rivers": [{"points": [[0, 0, 0]], "flow": [None]}]},
                    "flow of river 0"),
}


@pytest.mark.parametrize("case", list(NOT_RIVERS))
def test_a_file_that_is_not_a_rivers_file_is_a_message_naming_it(tmp_path, case):
    content, words = NOT_RIVERS[case]
    path = tmp_path / "x_rivers.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InputFileError) as caught:
        fmt.read(path)
    assert str(path) in str(caught.value) and words in str(caught.value), caught.value


def test_a_missing_rivers_file_is_a_message(tmp_path):
    with pytest.raises(InputFileError, match="cannot read the rivers"):
        fmt.read(tmp_path / "none_rivers.json")
