from g2po.analysis.labels import distinguishing_labels, key_diff, natural_key, shorten_middle


def test_labels_keep_what_tells_keys_apart():
    base = "-= Kitchen =- You are in a kitchen. A table is here. You carry: "
    keys = [base + "a knife", base + "nothing", base + "a knife and an apple"]
    labels = distinguishing_labels(keys, limit=24)
    assert len(set(labels)) == 3
    assert all("Kitchen" not in label for label in labels)  # shared by every key
    assert "nothing" in labels[1] and "apple" in labels[2]
    assert all(len(label) <= 40 for label in labels)


def test_labels_of_a_single_key_and_of_clashing_keys():
    assert distinguishing_labels(["only one key here"]) == ["only one key here"]
    long = "x " * 40
    labels = distinguishing_labels([long + "left", long + "right"], limit=8)
    assert labels[0] != labels[1]


def test_key_diff_reconstructs_both_keys():
    a, b = "You carry: a knife. Room 12", "You carry: an apple. Room 13"
    diff = key_diff(a, b)
    assert "".join(t for op, t in diff if op in ("equal", "delete")) == a
    assert "".join(t for op, t in diff if op in ("equal", "insert")) == b
    assert {op for op, _ in diff} == {"equal", "delete", "insert"}
    assert key_diff("same", "same") == [("equal", "same")]


def test_ids_shortened_in_the_middle_stay_distinct_and_sort_naturally():
    ids = [f"cooking-recipe3-take2-go9-open-cook-cut-train-s0:{i}" for i in (10, 2, 1)]
    short = shorten_middle(ids)
    assert len(set(short)) == 3 and all(len(s) < len(i) for s, i in zip(short, ids))
    assert all(s.startswith("cooking-") and s.endswith(i[-4:]) for s, i in zip(short, ids))
    assert shorten_middle(["short"]) == ["short"]
    assert sorted(["s0:10", "s0:2", "s1:0", "s0:1"], key=natural_key) == \
        ["s0:1", "s0:2", "s0:10", "s1:0"]
