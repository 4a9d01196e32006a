from pathlib import Path

import numpy as np
import pandas as pd

import loaders
from g2po.analysis.labels import (
    STOPWORDS,
    cut_middle,
    distinguishing_labels,
    format_number,
    headline,
    key_diff,
    lead_with_difference,
    natural_key,
    snap_frame,
    snap_to_zero,
    terse,
    without_shared_parts,
)

COOKING = Path(__file__).resolve().parents[2] / "app" / "data" / "cooking16"


def test_labels_keep_what_tells_keys_apart():
    base = "-= Kitchen =- You are in a kitchen. A table is here. You carry: "
    keys = [base + "a knife", base + "nothing", base + "a knife and an apple"]
    labels = distinguishing_labels(keys, limit=24)
    assert len(set(labels)) == 3
    assert all("Kitchen" not in label for label in labels)  # shared by every key
    assert "nothing" in labels[1] and "apple" in labels[2]
    assert all(len(label) <= 40 for label in labels)


def test_labels_of_a_single_key_and_of_clashing_keys():
    assert distinguishing_labels(["dusty attic key"]) == ["dusty attic key"]  # its headline
    # without the function words a game's sentences start with
    assert distinguishing_labels(["You are in the attic"]) == ["attic"]
    assert distinguishing_labels(["-= Attic =-\nDusty."]) == ["Attic"]
    long = "x " * 40
    labels = distinguishing_labels([long + "left", long + "right"], limit=8)
    assert labels[0] != labels[1]


def test_labels_name_the_place_then_the_objects_never_a_turn_of_phrase():
    keys = ["-= Kitchen =-\nYou're in a kitchen. The fridge is closed.\nYou carry a knife.",
            "-= Kitchen =-\nYou're in a kitchen. The fridge is open.\nYou carry a knife.",
            "-= Kitchen =-\nYou're in a kitchen. The fridge is open.\nYou carry a red apple.",
            "-= Garden =-\nYou're now in a garden, superficially.\nYou carry a knife."]
    labels = distinguishing_labels(keys)
    assert [label.split(" · ")[0] for label in labels] == ["Kitchen"] * 3 + ["Garden"]
    assert "closed" in labels[0] and "open" in labels[1] and "apple" in labels[2]
    assert labels[3] == "Garden"  # alone in its place: the place says it
    words = {w.strip("….,").lower() for label in labels for w in label.split()}
    assert not words & STOPWORDS
    assert headline("You arrive at drawer 1. The drawer 1 is closed.") == "arrive at drawer 1"
    assert headline("x" * 80) == ""


def test_every_cooking_state_is_labelled_by_its_room():
    log = loaders.open_log(COOKING)
    steps = log.load_group(1, log.groups(1)[0])
    keys = steps["state_key"].drop_duplicates().tolist()
    labels = distinguishing_labels(keys)
    rooms = [headline(k) for k in keys]
    assert len(set(rooms)) > 3  # the group walks through several rooms
    assert all(label.startswith(room) for label, room in zip(labels, rooms, strict=True))
    assert all(label.split()[-1].lower().strip("…") not in STOPWORDS for label in labels)


def test_ids_lead_with_what_tells_them_apart():
    groups = [f"cooking-recipe3-take2-go9-open-cook-cut-train-s{i}" for i in (1, 4, 12)]
    assert lead_with_difference(groups) == (["s1", "s4", "s12"],
                                            "cooking-recipe3-take2-go9-open-cook-cut-train-")
    trajs = [f"{groups[0]}:{i}" for i in (0, 2, 10)]
    assert lead_with_difference(trajs)[0] == ["s1:0", "s1:2", "s1:10"]  # not a bare number
    uuids = ["3f2a9c1e-77aa-4b1d-9e4b-000000000001", "3f2a9c1e-77aa-4b1d-9e4b-000000000002",
             "9b0c1d2e-0000-4000-8000-0000000000ff"]
    short, shared = lead_with_difference(uuids, limit=14)
    assert shared == "" and len(set(short)) == 3 and all(len(s) <= 14 for s in short)
    assert lead_with_difference(["only-one"]) == (["only-one"], "")
    assert lead_with_difference([groups[0]], limit=8) == (["…rain-s1"], "")  # its end


def test_key_diff_reconstructs_both_keys():
    a, b = "You carry: a knife. Room 12", "You carry: an apple. Room 13"
    diff = key_diff(a, b)
    assert "".join(t for op, t in diff if op in ("equal", "delete")) == a
    assert "".join(t for op, t in diff if op in ("equal", "insert")) == b
    assert {op for op, _ in diff} == {"equal", "delete", "insert"}
    assert key_diff("same", "same") == [("equal", "same")]


def test_ids_sort_naturally():
    assert sorted(["s0:10", "s0:2", "s1:0", "s0:1"], key=natural_key) == \
        ["s0:1", "s0:2", "s0:10", "s1:0"]


def test_floating_point_noise_shows_as_zero():
    # a mean of advantages that cancel: the sum of these is -2.2e-16 in float64, not 0
    noise = float(np.mean([0.1, 0.2, -0.3]))
    assert noise != 0.0 and format_number(noise) == "0"
    assert format_number(-0.0) == "0" and format_number(float("nan")) == "–"
    assert format_number(0.123456) == "0.123" and format_number(-2.5) == "-2.5"
    # relative to the values' own scale: 1e-7 is noise among values of 1e3, not among 1e-6
    assert snap_to_zero(np.array([1e-7, 1e3])).tolist() == [0.0, 1000.0]
    assert snap_to_zero(np.array([1e-7, 1e-6]), scale=1e-6).tolist() == [1e-7, 1e-6]
    frame = pd.DataFrame({"value": [noise, 0.5], "visits": [1, 2], "key": ["a", "b"],
                          "gone": [np.nan, 1.0]})
    snapped = snap_frame(frame)
    assert snapped["value"].tolist() == [0.0, 0.5] and snapped["visits"].tolist() == [1, 2]
    assert np.isnan(snapped["gone"].iloc[0]) and frame["value"].iloc[0] == noise  # a copy


def test_alfworlds_start_is_labelled_by_where_it_is_not_the_games_opening_words():
    """ALFWorld's start ("You are in the middle of a room. Looking quickly around you, you see
    …") read "You are in the middle o…": the label keeps what places it; the short form a
    zoomed-out drawing shows drops the function words of every label."""
    start = ("You are in the middle of a room. Looking quickly around you, you see a armchair "
             "1, a bed 1, a drawer 3, a drawer 2, a drawer 1, a dresser 1, and a shelf 1.")
    keys = [start, "You arrive at drawer 3. The drawer 3 is closed.",
            "You open the drawer 3. The drawer 3 is open. In it, you see nothing.",
            "You arrive at drawer 2. The drawer 2 is closed.",
            "You arrive at dresser 1. On the dresser 1, you see a alarmclock 1."]
    labels = distinguishing_labels(keys)
    assert labels[0] == "middle of a room"
    assert labels[1].startswith("arrive at drawer 3") and labels[2].startswith("open the drawer 3")
    assert [terse(label) for label in labels[:3]] == [
        "middle room", terse(labels[1]), terse(labels[2])]
    assert terse(labels[1]).startswith("arrive drawer 3")
    assert not {w.lower() for label in labels for w in terse(label).split()} & STOPWORDS


def test_tasks_are_labelled_without_their_greeting():
    """A task's first sentence is a greeting, not a place: without headlines, every word of
    a label is chosen against every other task."""
    tasks = ["Welcome to TextWorld! Then, lift the coin from the floor of the sauna.",
             "Welcome to TextWorld! Then, lift the coin from the floor of the attic.",
             "Hey, thanks for coming over! Then, lift the coin from the floor of the sauna."]
    assert distinguishing_labels(tasks)[0].startswith("Welcome to TextWorld")
    labels = distinguishing_labels(tasks, headlines=False)
    assert len(set(labels)) == 3 and "attic" in labels[1]
    assert not any(label.startswith("Welcome") for label in labels)


def test_names_lose_what_they_all_share_and_are_cut_in_the_middle():
    gts = ["pick_and_place-Mug-None-Fridge-12", "look_at_obj_in_light-Pan-None-Drawer-36",
           "pick_and_place-Egg-None-Fridge-7"]
    assert without_shared_parts(gts) == ["pick_and_place-Mug-Fridge-12",
                                         "look_at_obj_in_light-Pan-Drawer-36",
                                         "pick_and_place-Egg-Fridge-7"]
    assert without_shared_parts(["a-b", "a-b"]) == ["a-b", "a-b"]  # nothing left: whole
    assert without_shared_parts(["alone-None"]) == ["alone-None"]
    name = "pick_two_obj_and_place-Potato-None-Fridge-209"
    assert cut_middle(name, 24) == "pick_t…o-None-Fridge-209" and len(cut_middle(name, 24)) == 24
    assert cut_middle(name, 10, head=0) == "…ridge-209"
    assert cut_middle("short", 8) == "short"
