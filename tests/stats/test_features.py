"""The battle_features extra: exact, order-free merges of distinct design rows, and its cache encoding."""

import numpy as np

from pipeline.stats.features import FIXED, Design, summed, value_bits


def design(rng: np.random.Generator, names: tuple[str, ...], rows: int) -> Design:
    values = rng.choice([0.0, -0.0, 1.5, 7.0, np.nan], size=(rows, 2 * len(names)))
    keys = np.column_stack([rng.integers(0, 3, (rows, 3)), value_bits(values)])
    return summed(names, keys, rng.integers(1, 2**30, rows))


def test_merges_are_exact_and_do_not_depend_on_the_order():
    rng = np.random.default_rng(0)
    parts = [design(rng, ("len",), 40), design(rng, ("len", "md"), 40), design(rng, (), 40), design(rng, ("md",), 40)]
    left = ((parts[0] + parts[1]) + parts[2]) + parts[3]
    right = parts[3] + (parts[2] + (parts[1] + parts[0]))
    assert left.names == right.names == ("len", "md")
    assert left.keys.tobytes() == right.keys.tobytes() and left.units.tobytes() == right.units.tobytes()
    assert left.units.sum() == sum(int(p.units.sum()) for p in parts)
    assert len(np.unique(left.keys, axis=0)) == len(left.keys)  # distinct rows: -0.0 is 0.0, every NaN one NaN
    widened = parts[2].widened(("len", "md"))
    assert np.isnan(widened.keys[:, FIXED:].view(np.float64)).all()


def test_encoding_round_trips_without_objects():
    rng = np.random.default_rng(1)
    for names in [(), ("len",), ("len", "md_count")]:
        original = design(rng, names, 25)
        arrays = original.to_arrays()
        assert all(a.dtype != object for a in arrays.values())
        back = Design.from_arrays(arrays)
        assert back.names == names and back.keys.tobytes() == original.keys.tobytes()
