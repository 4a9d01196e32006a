"""ALFWorld games made here: a ``game.tw-pddl`` and ``traj_data.json`` from a seed, no download.

ALFWorld's text games are PDDL problems played with its domain (``alfworld/data/alfred.pddl``)
and text grammar (``alfred.twl2``). The games of its dataset come only from
``alfworld-download``; everything a game is made of ships in the ``alfworld`` wheel itself,
and this module puts it together:

- the **room**: an AI2-THOR floor plan's receptacles and where the agent stands to reach each
  (``alfworld/gen/layouts/FloorPlan*-openable.json``), the object types the scene holds
  (``…-objects.json``) and its reachable floor points (``…-layout.npy``, the agent's start);
- the **objects**: the task's target and a few distractors, each put in a receptacle that
  ALFRED's own table says can hold it (``constants.VAL_RECEPTACLE_OBJECTS``), with the
  properties the domain's actions test (``pickupable``, ``heatable``, ``coolable``,
  ``cleanable``, ``toggleable``: ``constants.VAL_ACTION_OBJECTS``);
- the **goal**: ALFWorld's goal for the task type (``goal_library.gdict``) and one of its task
  sentences, put into the grammar where ALFWorld puts it ("UNKNOWN GOAL");
- ``traj_data.json``: the task type and targets, which ALFWorld's hand-coded expert reads.

Rooms follow ALFRED's split of floor plans: ``train`` and ``valid_seen`` draw from its
training scenes (different games: the split is part of the seed), ``valid_unseen`` from its
held-out scenes, and each task type only from the room types ALFRED allows it
(``constants.GOALS_VALID``: heating only in kitchens, a lamp only in living rooms and
bedrooms). Everything is drawn from one ``random.Random`` seeded by split, task type, seed and
attempt, so a game is the same on every machine. Whether the game is solvable is checked by
playing it (see :mod:`g2po.envs.alfworld_env`).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from g2po.envs.base import EnvError, MissingEnvironmentError

__all__ = [
    "TASK_TYPES",
    "GENERATED_SPLITS",
    "GENERATOR_VERSION",
    "GameFiles",
    "Scene",
    "alfworld_assets",
    "load_scene",
    "make_game",
    "pddl_name",
]

#: ALFWorld's six task types (``alfred_tw_env.TASK_TYPES``), in its order.
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
#: Splits of generated games: ALFRED's training floor plans (two disjoint seed streams) and its
#: held-out ones.
GENERATED_SPLITS = ("train", "valid_seen", "valid_unseen")
#: Bump when a change makes other games from the same seeds (it names the cache folder).
GENERATOR_VERSION = 1

_INSTALL = (
    "generated ALFWorld games need the `alfworld` package and Fast Downward: "
    "pip install -e '.[alfworld]' (alfworld==0.4.2, fast-downward-textworld==20.6.4; the "
    "latter builds from source with cmake and g++)"
)
_LAMPS = ("DeskLamp", "FloorLamp")
#: Where a lamp stands (in this order of preference) when the scene has such a receptacle.
_LAMP_STANDS = ("SideTable", "Desk", "Dresser", "Shelf", "TVStand", "CoffeeTable")
#: Receptacle ids that need the basin suffix ALFWorld's games use (the agent uses the basin).
_BASINS = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}
#: The appliance a task needs in the room, and that it is not also the place to put the object.
_APPLIANCE = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
_PROPERTY = {
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}
_DISTRACTOR_TYPES = (4, 8)  # how many other object types a room holds
_CHAR_MAP = {"-": "_minus_", "#": "-", "|": "_bar_", "+": "_plus_", ".": "_dot_",
             ",": "_comma_"}
_CHARS = re.compile("|".join(re.escape(c) for c in _CHAR_MAP))


def pddl_name(text: str) -> str:
    """An ALFRED id as a PDDL name, with ALFWorld's character mapping (which its demangler
    undoes to name the object in the text: ``Apple|+00.10|…`` → "apple 1").

    >>> pddl_name("Sink|-01.90|+00.97|-01.50|SinkBasin")
    'Sink_bar__minus_01_dot_90_bar__plus_00_dot_97_bar__minus_01_dot_50_bar_SinkBasin'
    """
    return _CHARS.sub(lambda m: _CHAR_MAP[m.group(0)], text)


@dataclass(frozen=True)
class Assets:
    """The files of the ``alfworld`` package a game is made from."""

    domain: str
    grammar: str
    layouts: Path
    constants: Any
    goals: Mapping[str, Any]


@cache
def alfworld_assets() -> Assets:
    """ALFWorld's domain, grammar, layouts folder, constants and goal library (read once)."""
    try:
        import alfworld
        import alfworld.gen.constants as constants
        from alfworld.gen.goal_library import gdict
    except ImportError as err:
        raise MissingEnvironmentError(_INSTALL) from err
    root = Path(alfworld.__file__).resolve().parent
    data = root / "data"
    try:
        domain = (data / "alfred.pddl").read_text()
        grammar = (data / "alfred.twl2").read_text()
    except OSError as err:
        raise MissingEnvironmentError(f"{_INSTALL} ({err})") from err
    return Assets(domain, grammar, root / "gen" / "layouts", constants, gdict)


@dataclass(frozen=True)
class Scene:
    """One floor plan: receptacle id → (type, the agent's pose to reach it), object types,
    reachable floor points."""

    name: str
    receptacles: Mapping[str, tuple[str, tuple[float, ...]]]
    object_types: frozenset[str]
    floor: tuple[tuple[float, float], ...]

    def types(self) -> set[str]:
        return {t for t, _ in self.receptacles.values()}

    def of_type(self, rtype: str) -> list[str]:
        return sorted(r for r, (t, _) in self.receptacles.items() if t == rtype)


@cache
def load_scene(number: int) -> Scene:
    """Floor plan ``number`` from the package's layouts (receptacles without the movable ones:
    bowls, boxes, mugs … are objects here, as in ALFWorld's text games)."""
    import numpy as np

    assets = alfworld_assets()
    c = assets.constants
    base = assets.layouts / f"FloorPlan{number}"
    try:
        poses = json.loads(Path(f"{base}-openable.json").read_text())
        objects = json.loads(Path(f"{base}-objects.json").read_text())
        floor = np.load(f"{base}-layout.npy")
    except (OSError, ValueError) as err:
        raise EnvError(f"ALFWorld floor plan {number}: unreadable layout ({err})") from err
    receptacles = {}
    for rid, pose in poses.items():
        parts = rid.split("|")
        rtype = parts[-1] if len(parts) == 5 else parts[0]
        if rtype in _BASINS:
            rid, rtype = f"{rid}|{_BASINS[rtype]}", _BASINS[rtype]
        if rtype in c.RECEPTACLES and rtype not in c.MOVABLE_RECEPTACLES_SET:
            receptacles[rid] = (rtype, tuple(float(v) for v in pose))
    return Scene(f"FloorPlan{number}", receptacles, frozenset(objects),
                 tuple((float(x), float(z)) for x, z in floor))


@dataclass(frozen=True)
class GameFiles:
    """What a game folder holds: the ``game.tw-pddl`` mapping and ``traj_data.json``."""

    game: dict[str, Any]
    traj_data: dict[str, Any]

    def write(self, folder: Path) -> Path:
        """Write both files into ``folder``; return the game file's path."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "traj_data.json").write_text(json.dumps(self.traj_data, indent=1))
        path = folder / "game.tw-pddl"
        path.write_text(json.dumps(self.game))
        return path


def _scene_numbers(split: str, task_type: str) -> list[int]:
    c = alfworld_assets().constants
    pool = c.TEST_SCENE_NUMBERS if split == "valid_unseen" else c.TRAIN_SCENE_NUMBERS
    rooms = c.GOALS_VALID[task_type]
    return [n for n in pool if any(n in c.SCENE_TYPE[room] for room in rooms)]


def _placeable(scene: Scene) -> dict[str, list[str]]:
    """Object type → the receptacles of the scene ALFRED lets it be in (types the scene
    holds and that can be picked up)."""
    c = alfworld_assets().constants
    out: dict[str, list[str]] = {}
    for otype in sorted(scene.object_types):
        if otype in _LAMPS or otype not in c.OBJECTS_SET:
            continue
        where = [r for r, (t, _) in sorted(scene.receptacles.items())
                 if otype in c.VAL_RECEPTACLE_OBJECTS.get(t, ())]
        if where:
            out[otype] = where
    return out


def _targets(task_type: str, scene: Scene) -> list[tuple[str, str, str]]:
    """``(object, parent, toggle)`` type choices the scene allows for the task type."""
    c = alfworld_assets().constants
    placeable = _placeable(scene)
    rtypes = scene.types()
    out = []
    if task_type == "look_at_obj_in_light":
        lamps = [lamp for lamp in _LAMPS if lamp in scene.object_types]
        return [(o, "", lamp) for lamp in lamps for o in placeable]
    appliance = _APPLIANCE.get(task_type)
    if appliance and appliance not in rtypes:
        return []
    for otype, where in placeable.items():
        if task_type in _PROPERTY and otype not in c.VAL_ACTION_OBJECTS[_PROPERTY[task_type]]:
            continue
        for parent in sorted(rtypes):
            if parent == appliance or otype not in c.VAL_RECEPTACLE_OBJECTS.get(parent, ()):
                continue
            # the object must start somewhere else, or the goal holds before the first step
            if any(scene.receptacles[r][0] != parent for r in where):
                out.append((otype, parent, ""))
    return out


def _object_id(otype: str, receptacle: str, rng: random.Random, taken: set[str]) -> str:
    """A fresh ALFRED-style id (type and position) for an object put in ``receptacle``."""
    x, y, z = (float(v) for v in receptacle.split("|")[1:4])
    while True:
        dx, dy, dz = (rng.randint(-40, 40) / 100 for _ in range(3))
        oid = f"{otype}|{x + dx:+06.2f}|{y + abs(dy):+06.2f}|{z + dz:+06.2f}"
        if oid not in taken:
            taken.add(oid)
            return oid


def _location(pose: Sequence[float]) -> str:
    """ALFRED's location name of an agent pose (grid x, grid z, rotation / 90, horizon)."""
    x, z, rotation, horizon = pose
    return f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{round(rotation / 90) % 4}|{round(horizon)}"


def make_game(task_type: str, seed: int, split: str = "train", attempt: int = 0) -> GameFiles:
    """The game of ``task_type`` for ``seed`` in ``split`` (``attempt`` > 0: the next draw,
    for when the expert could not solve the previous one). Deterministic in its arguments."""
    if task_type not in TASK_TYPES:
        raise EnvError(f"ALFWorld task type {task_type!r} is not one of {', '.join(TASK_TYPES)}")
    if split not in GENERATED_SPLITS:
        raise EnvError(f"generated ALFWorld split {split!r} is not one of "
                       f"{', '.join(GENERATED_SPLITS)}")
    assets = alfworld_assets()
    rng = random.Random(f"g2po-alfworld-v{GENERATOR_VERSION}:{split}:{task_type}:{seed}:{attempt}")
    numbers = _scene_numbers(split, task_type)
    rng.shuffle(numbers)
    for number in numbers:
        scene = load_scene(number)
        choices = _targets(task_type, scene)
        if choices:
            break
    else:  # pragma: no cover - every task type has rooms that allow it
        raise EnvError(f"no ALFWorld floor plan of split {split} allows {task_type}")
    otype, parent, toggle = rng.choice(choices)
    problem, objects = _problem(task_type, scene, otype, parent, toggle, rng)
    params = {"object_target": otype, "parent_target": parent, "toggle_target": toggle,
              "mrecep_target": "", "object_sliced": False}
    template = rng.choice(assets.goals[task_type]["templates"])
    task = template.format(obj=otype.lower(), recep=parent.lower(), toggle=toggle.lower(),
                           mrecep="")
    traj_data = {
        "task_type": task_type, "pddl_params": params,
        "scene": {"floor_plan": scene.name, "scene_num": number},
        "g2po": {"generator_version": GENERATOR_VERSION, "split": split, "seed": seed,
                 "attempt": attempt, "task": task, "objects": objects},
    }
    game = {"pddl_domain": assets.domain,
            "grammar": assets.grammar.replace("UNKNOWN GOAL", task),
            "pddl_problem": problem, "solvable": False}
    return GameFiles(game, traj_data)


def _problem(task_type: str, scene: Scene, otype: str, parent: str, toggle: str,
             rng: random.Random) -> tuple[str, list[str]]:
    """The PDDL problem text and the ids of the objects placed."""
    assets = alfworld_assets()
    c = assets.constants
    placeable = _placeable(scene)
    taken: set[str] = set()
    placed: list[tuple[str, str, str]] = []  # (object id, type, receptacle)

    def put(kind: str, where: Sequence[str]) -> None:
        receptacle = rng.choice(list(where))
        placed.append((_object_id(kind, receptacle, rng, taken), kind, receptacle))

    away = [r for r in placeable[otype] if scene.receptacles[r][0] != parent]
    if task_type == "pick_two_obj_and_place":
        # ALFWorld's hand-coded expert finds the second object only where it took the first:
        # after "move X to Y" it still counts X as held ("put" is what it tracks) and goes
        # back there to drop it. Two instances share an open receptacle, a third may be apart.
        shown = [r for r in away if scene.receptacles[r][0] not in c.OPENABLE_CLASS_SET]
        pair = rng.choice(shown or away)
        put(otype, [pair])
        put(otype, [pair])
        if rng.random() < 0.5:
            put(otype, away)
    else:
        for _ in range(rng.randint(1, 3)):
            put(otype, away)
    if toggle:
        stands = [r for t in _LAMP_STANDS for r in scene.of_type(t)]
        plain = [r for r, (t, _) in sorted(scene.receptacles.items())
                 if t not in c.OPENABLE_CLASS_SET]
        put(toggle, stands[:1] or plain[:1] or sorted(scene.receptacles)[:1])
    others = [t for t in placeable if t != otype]
    for kind in rng.sample(others, min(len(others), rng.randint(*_DISTRACTOR_TYPES))):
        for _ in range(rng.randint(1, 2)):
            put(kind, placeable[kind])

    floor = list(scene.floor)
    start = _location((*rng.choice(floor), rng.choice((0, 90, 180, 270)), 30))
    locations = {r: _location(pose) for r, (_, pose) in scene.receptacles.items()}
    while start in locations.values():
        start = _location((*rng.choice(floor), rng.choice((0, 90, 180, 270)), 30))

    rtypes = sorted(set(c.RECEPTACLES) - c.MOVABLE_RECEPTACLES_SET)
    otypes = sorted(c.OBJECTS_SET - set(rtypes))
    used_otypes = sorted({kind for _, kind, _ in placed})
    action_sets = {"Heatable": "heatable", "Coolable": "coolable", "Cleanable": "cleanable",
                   "Toggleable": "toggleable"}
    init = ["(= (total-cost) 0)", f"(atLocation agent1 {pddl_name(start)})"]
    for rid, (rtype, _) in sorted(scene.receptacles.items()):
        name = pddl_name(rid)
        init.append(f"(receptacleType {name} {rtype}Type)")
        init.append(f"(receptacleAtLocation {name} {pddl_name(locations[rid])})")
        if rtype in c.OPENABLE_CLASS_SET:
            init.append(f"(openable {name})")
    for oid, kind, receptacle in placed:
        name = pddl_name(oid)
        init.append(f"(objectType {name} {kind}Type)")
        init.append(f"(inReceptacle {name} {pddl_name(receptacle)})")
        if kind not in _LAMPS:
            init.append(f"(pickupable {name})")
        init.extend(f"({pred} {name})" for key, pred in action_sets.items()
                    if kind in c.VAL_ACTION_OBJECTS[key])
    for rtype in sorted(scene.types()):
        init.extend(f"(canContain {rtype}Type {kind}Type)" for kind in used_otypes
                    if kind in c.VAL_RECEPTACLE_OBJECTS.get(rtype, ()))

    names = [
        "agent1 - agent",
        *(f"{t}Type - otype" for t in otypes),
        *(f"{t}Type - rtype" for t in rtypes),
        *(f"{pddl_name(oid)} - object" for oid, _, _ in placed),
        *(f"{pddl_name(r)} - receptacle" for r in sorted(scene.receptacles)),
        *(f"{pddl_name(loc)} - location" for loc in sorted({start, *locations.values()})),
    ]
    goal = assets.goals[task_type]["pddl"].format(obj=otype, recep=parent, toggle=toggle,
                                                  mrecep="")
    # the library's goal closes `(define …` itself; Fast Downward wants the metric after it
    goal = pddl_name(goal.strip()).removesuffix(")").rstrip()
    indent = "\n        "
    problem = (
        f"(define (problem g2po_{scene.name.lower()})\n"
        f"    (:domain alfred)\n"
        f"    (:objects{indent}{indent.join(names)}\n    )\n"
        f"    (:init{indent}{indent.join(init)}\n    )\n"
        f"    {goal}\n"
        f"    (:metric minimize (total-cost))\n"
        f")\n"
    )
    return problem, [oid for oid, _, _ in placed]
