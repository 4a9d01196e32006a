"""The prompt and the <think>/<action> response format."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from g2po.agent_format import (
    admissible_actions,
    build_prompt,
    current_observation,
    extract_action,
    format_response,
    normalize_action,
    parse_action,
)

ADMISSIBLE = ["go to cabinet 1", "take mug 2 from desk 1", "look", "inventory"]


def test_valid_action_returns_the_admissible_spelling():
    response = "<think>The mug is on the desk.</think>\n<action>Take  Mug 2 from DESK 1.</action>"
    assert parse_action(response, ADMISSIBLE) == ("take mug 2 from desk 1", True)


def test_quotes_and_surrounding_space_are_ignored():
    assert parse_action("<action> 'look' </action>", ADMISSIBLE) == ("look", True)


def test_action_not_admissible_is_invalid_and_keeps_the_tagged_text():
    assert parse_action("<action>fly to the moon</action>", ADMISSIBLE) == ("fly to the moon",
                                                                            False)


def test_missing_tag_is_invalid_and_keeps_the_raw_text():
    assert parse_action("  go to cabinet 1  ", ADMISSIBLE) == ("go to cabinet 1", False)
    long = "x" * 1000
    action, valid = parse_action(long, ADMISSIBLE)
    assert not valid and action == "x" * 200


def test_unclosed_tag_is_invalid():
    assert parse_action("<action>look", ADMISSIBLE)[1] is False


def test_last_tag_wins_over_one_mentioned_while_thinking():
    response = ("<think>I could answer <action>fly</action> but no.</think>"
                "<action>look</action>")
    assert parse_action(response, ADMISSIBLE) == ("look", True)


def test_free_form_accepts_any_non_empty_tagged_text():
    code = "print(apis.spotify.show_song(song_id=1))"
    assert parse_action(f"<action>{code}</action>", None) == (code, True)
    assert parse_action("<action>   </action>", None) == ("", False)
    assert parse_action("no tag at all", None) == ("no tag at all", False)


def test_require_think():
    assert parse_action("<action>look</action>", ADMISSIBLE, require_think=True) == ("look",
                                                                                     False)
    ok = "<think>hm</think><action>look</action>"
    assert parse_action(ok, ADMISSIBLE, require_think=True) == ("look", True)


def test_format_response_round_trips():
    text = format_response("go to cabinet 1", "the cabinet may hold it")
    assert text.startswith("<think>the cabinet may hold it</think>")
    assert parse_action(text, ADMISSIBLE) == ("go to cabinet 1", True)
    assert extract_action(text) == "go to cabinet 1"


def test_normalize_action():
    assert normalize_action('  "Go  To\tCabinet 1." ') == "go to cabinet 1"


def test_prompt_without_history():
    prompt = build_prompt("put a mug in the desk.", "You are in the middle of a room.",
                          ADMISSIBLE)
    assert "Your task is to: put a mug in the desk." in prompt
    assert "Your current observation is: You are in the middle of a room." in prompt
    assert "['go to cabinet 1', 'take mug 2 from desk 1', 'look', 'inventory']" in prompt
    assert "<think> </think>" in prompt and "<action> </action>" in prompt
    assert "Prior to this step" not in prompt


def test_prompt_shows_the_last_k_steps_with_their_numbers():
    history = [(f"obs {i}", f"act {i}") for i in range(1, 6)]
    prompt = build_prompt("task", "now", ADMISSIBLE, history, history_length=2)
    assert "already taken 5 step(s)" in prompt
    assert "[Observation 4: 'obs 4', Action 4: 'act 4']" in prompt
    assert "[Observation 5: 'obs 5', Action 5: 'act 5']" in prompt
    assert "obs 3" not in prompt
    assert "You are now at step 6 and your current observation is: now" in prompt


def test_prompt_history_length_zero_shows_none():
    prompt = build_prompt("task", "now", ADMISSIBLE, [("a", "b")], history_length=0)
    assert "Observation 1" not in prompt and "Your current observation is: now" in prompt


def test_free_form_prompt_names_the_action_kind():
    prompt = build_prompt("pay the bill", "ready", None, action_hint="a block of Python code",
                          role="You are a coding agent.")
    assert prompt.startswith("You are a coding agent. Your task is to: pay the bill")
    assert "admissible actions" not in prompt
    assert "write your action (a block of Python code)" in prompt


def test_docstring_examples():
    import doctest

    import g2po.agent_format

    assert doctest.testmod(g2po.agent_format).failed == 0


def test_current_observation_reads_back_what_build_prompt_wrote():
    for observation, admissible, history in [
        ("A hall.", ["go east"], []),
        ("-= Attic =-\nDusty.\n\nYou see a box.", ["open box", "look"], [("x", "y")] * 5),
        ("Your code ran: 3", None, [("Your current observation is: old", "print(3)")]),
    ]:
        prompt = build_prompt("task", observation, admissible, history, action_hint="code")
        assert current_observation(prompt) == observation
    assert current_observation("Tell me a joke.") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Your current observation is:", "your current observation is: ",
                                 "our current observation is:", "Y", "y", " ", "\n", "x",
                                 "A hall.", "Your admissible actions of the current situation "
                                 "are: ['a']."]), max_size=20))
def test_the_last_observation_mark_is_the_regexs_last_match(pieces):
    from g2po.agent_format import _OBSERVATION_MARK, _last_observation_mark

    prompt = "".join(pieces)
    marks = list(_OBSERVATION_MARK.finditer(prompt))
    assert _last_observation_mark(prompt) == (marks[-1].end() if marks else None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["Your current observation is: ", "A hall.", " ", "\t", "\n",
                                 "\u2028", "\u3000", "x", "Your admissible actions of the current "
                                 "situation are:", "Now it's your turn to take an action.",
                                 "Now it's your turn"]), max_size=20))
def test_the_observation_ends_where_the_regex_ends_it(pieces):
    from g2po.agent_format import _OBSERVATION_END, _last_observation_mark

    prompt = "".join(pieces)
    end = _last_observation_mark(prompt)
    expected = None
    if end is not None:
        found = _OBSERVATION_END.search(prompt[end:])
        expected = (prompt[end:][:found.start()] if found else prompt[end:]).strip()
    assert current_observation(prompt) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), max_size=6),
       st.lists(st.tuples(st.text(max_size=20), st.text(max_size=10)), max_size=3))
def test_a_prompt_gives_back_its_admissible_actions(actions, history):
    """Any action text (quotes, brackets, backslashes, newlines) reads back as written, after
    a history that may quote anything."""
    prompt = build_prompt("a task [with] 'quotes'", "A hall.", actions, history)
    assert admissible_actions(prompt) == actions
    assert admissible_actions(build_prompt("t", "A hall.", None, history)) is None


def test_verl_agents_list_and_broken_lists():
    listed = "Your admissible actions of the current situation are: ['look'\n 'go to desk 1']."
    assert admissible_actions("Your current observation is: x\n" + listed) == \
        ["look", "go to desk 1"]
    assert admissible_actions("Your admissible actions of the current situation are: "
                              "['look', 'go") is None
    assert admissible_actions("Your admissible actions of the current situation are: look") \
        is None
