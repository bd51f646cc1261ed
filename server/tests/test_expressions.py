"""The expression and template evaluator of Orch8's block format (issue 31, item 2).

Orch8's documented examples (docs/SEQUENCES.md, "Expressions and Templates", and the
router / loop / for_each blocks) are rows of these tables.
"""

from __future__ import annotations

import contextlib
import random
import string
import sys
from typing import Any

import pytest

from orch8_server.lifecycle.expressions import (
    MAX_DEPTH,
    MAX_LENGTH,
    EvaluationError,
    ExpressionError,
    MissingValue,
    Path,
    compile_value,
    parse,
    parse_template,
    truthy,
)

DATA: dict[str, Any] = {
    "context": {
        "data": {
            "plan": "enterprise",
            "count": 3,
            "name": "Alice",
            "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 0}],
            "tags": ["vip", "beta"],
            "ratio": 0.5,
            "flag": True,
            "empty": "",
            "nothing": None,
        },
        "config": {"region": "eu"},
    },
    "data": {"plan": "pro"},
    "steps": {"lookup": {"items": [1, 2]}, "my-step": {"output": {"id": 7}}},
    "item": {"sku": "A-1", "qty": 2},
}


def lookup(path: Path) -> Any:
    """What the interpreter's lookup does: walk the instance's JSON, KeyError when absent."""
    value: Any = DATA
    for segment in path:
        in_dict = isinstance(value, dict) and isinstance(segment, str) and segment in value
        in_list = isinstance(value, list) and isinstance(segment, int) and segment < len(value)
        if not (in_dict or in_list):
            raise KeyError(path)
        value = value[segment]
    return value


VALUES = [
    # Orch8's documented conditions
    ('context.data.plan == "enterprise"', True),
    ('context.data.plan == "trial"', False),
    ("context.data.done != true", True),  # absent reads as null
    ('data.plan == "pro" && len(steps.lookup.items) > 0', True),
    ("context.data.items", DATA["context"]["data"]["items"]),
    # literals and paths
    ("42", 42),
    ("-1.5e2", -150.0),
    ("-9223372036854775808", -(2**63)),
    ("18446744073709551615", 2**64 - 1),
    ("-1e300", -1e300),
    ('"a\\"b\\u00e9\\n"', 'a"b\u00e9\n'),
    ("null", None),
    ('[1, "x", [true], null]', [1, "x", [True], None]),
    ("[]", []),
    ("context.data.items[1].sku", "B-2"),
    ("context.data.items.0.sku", "A-1"),
    ('steps["my-step"].output.id', 7),
    ("context.data.items[5].sku", None),
    ("nowhere.at.all", None),
    ("item.sku", "A-1"),
    # precedence and associativity
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("10 - 4 - 3", 3),
    ("2 * 3 % 4", 2),
    ("-2 * -3", 6),
    ("-context.data.count + 1", -2),
    ("!false && false", False),
    ("true || false && false", True),
    ("1 + 1 == 2 && 3 > 2", True),
    ("!context.data.nothing", True),
    # arithmetic
    ("6 / 3", 2),
    ("7 / 2", 3.5),
    ("7 % 3", 1),
    ("-7 % 3", -1),
    ("5.5 % 2", 1.5),
    ("context.data.ratio * 4", 2.0),
    ('"ab" + "cd"', "abcd"),
    ("[1] + [2, 3]", [1, 2, 3]),
    # comparisons: strict types, equality never raises
    ('"1" == 1', False),
    ("1 == 1.0", True),
    ("true == 1", False),
    ("true == true", True),
    ("false != false", False),
    ("context.data.flag == true", True),
    ("null == false", False),
    ("null == context.data.nothing", True),
    ('context.data.tags == ["vip", "beta"]', True),
    ('context.data.tags == ["beta", "vip"]', False),
    ("context.data.items[0] == item", True),
    ("[1, true] == [1, 1]", False),
    ('"b" > "a"', True),
    ("2 <= 2", True),
    ("3 >= 4", False),
    # membership
    ("2 in [1, 2]", True),
    ("true in [1]", False),
    ('"vip" in context.data.tags', True),
    ('"a" in "abc"', True),
    ('"plan" in context.data', True),
    ('"zzz" in context.data', False),
    ("[1] in [[1], 2]", True),
    # logic returns booleans and short-circuits
    ("1 && 2", True),
    ('0 || ""', False),
    ("false && 1 / 0", False),
    ("true || 1 / 0", True),
    ("context.data.nothing && context.data.nothing.x > 1", False),
    # ternary, right-associative
    ('context.data.count > 2 ? "big" : "small"', "big"),
    ("false ? 1 : false ? 2 : 3", 3),
    ("true ? false ? 1 : 2 : 3", 2),
    ("false ? 1 / 0 : 0", 0),
    # built-ins
    ("len(context.data.name)", 5),
    ("len(context.data)", 9),
    ("len([])", 0),
    ("abs(-2.5)", 2.5),
    ("abs(3)", 3),
    ("json(item)", '{"sku":"A-1","qty":2}'),
    ("json(null)", "null"),
    ('json("é")', '"é"'),
]


@pytest.mark.parametrize(("text", "expected"), VALUES)
def test_evaluates(text: str, expected: Any) -> None:
    value = parse(text).evaluate(lookup)
    assert value == expected
    assert type(value) is type(expected)  # 2 stays an int, True is not 1


EVALUATION_ERRORS = [
    ('"1" + 1', "'+' needs two numbers, two strings or two arrays, found string and number"),
    ('"2" < 3', "'<' compares two numbers or two strings, found string and number"),
    ("true + 1", "found boolean and number"),  # Python's bool is an int; JSON's is not
    ("null < 1", "found null and number"),
    ("[1] < [2]", "found array and array"),
    ("1 / 0", "division by zero"),
    ("1 % 0.0", "division by zero"),
    ('-"a"', "'-' needs a number, found string"),
    ("context.data.count - true", "'-' needs two numbers"),
    ("1 in 2", "'in' needs an array, a string or an object on its right, found number"),
    (
        "1 in context.data",
        "'in' needs a string on its left when its right is a string or an object, found number",
    ),
    ("1 in context.data.nothing", "found null"),
    ("len(1)", "len() takes a string, an array or an object, found number"),
    ('abs("1")', "abs() takes a number, found string"),
    ("1e308 * 10", "not a finite number"),
    ("18446744073709551615 + 1", "outside the 64-bit integer range"),
]


@pytest.mark.parametrize(("text", "message"), EVALUATION_ERRORS)
def test_refuses_at_evaluation(text: str, message: str) -> None:
    expr = parse(text)  # well formed: only the values are wrong
    with pytest.raises(EvaluationError) as caught:
        expr.evaluate(lookup)
    assert message in caught.value.message


PARSE_ERRORS = [
    ("", 0, "expected an expression, found the end of the expression"),
    ("   ", 3, "expected an expression"),
    ("a b", 2, "expected an operator or the end of the expression, found 'b'"),
    ("data.x ==", 9, "expected a value, found the end of the expression"),
    ("1 +* 2", 3, "expected a value, found '*'"),
    ("eval(x)", 0, "unknown function 'eval': expected one of abs, json, len"),
    ("len(a, b)", 5, "expected ')' after the one argument of len()"),
    ("(a + b", 6, "expected ')' to close '('"),
    ("[1, 2", 5, "expected ']' or ',' in the array"),
    ("[1, 2,]", 6, "expected a value, found ']'"),
    ('x == "abc', 5, "unclosed string: expected '\"'"),
    ('"\\q"', 1, "invalid string"),
    ('"\\ud800"', 0, "unpaired surrogate"),
    ("'a'", 0, "strings are written in double quotes"),
    ("a = 1", 2, "expected '==' (expressions cannot assign)"),
    ("a & b", 2, "expected '&&'"),
    ("a | b", 2, "expected '||'"),
    ("a.b(1)", 3, "only the functions abs, json, len can be called"),
    ("a.__class__.x(1)", 13, "only the functions"),
    ("a.", 2, "expected a name or an index after '.'"),
    ("a[1.5]", 2, "expected a string or an index (0, 1, ...) after '['"),
    ("a[b]", 2, "expected a string or an index"),
    ("a[0", 3, "expected ']' after the index"),
    ("(a)[0]", 3, "expected an operator or the end of the expression, found '['"),
    ("a < b < c", 6, "comparisons cannot be chained"),
    ("1 == 1 in [true]", 7, "comparisons cannot be chained"),
    ("a ? b", 5, "expected ':' between the branches of '?'"),
    ("a : b", 2, "expected an operator or the end of the expression, found ':'"),
    ("in [1]", 0, "expected a value, found 'in'"),
    ("007", 0, "a number cannot start with 0"),
    ("1e999", 0, "number out of range"),
    ("99999999999999999999999", 0, "integer out of the 64-bit range"),
    ("-9223372036854775809", 1, "integer out of the 64-bit range"),
    ("a # b", 2, "unexpected character '#'"),
    ("x \u00a0", 2, "unexpected character"),
    ("\u0663", 0, "unexpected character"),  # an Arabic-Indic digit is not a JSON digit
    ("a }} b", 2, "unexpected character '}'"),
]


@pytest.mark.parametrize(("text", "position", "message"), PARSE_ERRORS)
def test_refuses_at_definition(text: str, position: int, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse(text)
    assert message in caught.value.message
    assert caught.value.position == position
    assert f"(at position {position})" in str(caught.value)


def test_paths_in_order_for_definition_checks() -> None:
    expr = parse('a.b[0] + len(steps["s-1"].output.0) > (x ? y.z : [w])')
    assert expr.paths() == [
        ("a", "b", 0),
        ("steps", "s-1", "output", 0),
        ("x",),
        ("y", "z"),
        ("w",),
    ]
    assert parse("true").paths() == []
    assert parse("data.in.true.len == 1").paths() == [("data", "in", "true", "len")]


def test_lookup_sees_paths_only_and_is_asked_lazily() -> None:
    asked: list[Path] = []

    def spy(path: Path) -> Any:
        asked.append(path)
        return lookup(path)

    parse("context.data.flag || steps.never.read").evaluate(spy)
    assert asked == [("context", "data", "flag")]


def test_nesting_and_length_limits() -> None:
    deep = "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH
    assert parse(deep).evaluate(lookup) == 1
    with pytest.raises(ExpressionError, match="nested more than 64 levels") as caught:
        parse("(" + deep + ")")
    assert caught.value.position == MAX_DEPTH
    assert parse("!" * MAX_DEPTH + "0").evaluate(lookup) is False
    with pytest.raises(ExpressionError, match="nested"):
        parse("-" * (MAX_DEPTH + 1) + "x")
    with pytest.raises(ExpressionError, match="nested"):
        parse("a ? 1 : " * (MAX_DEPTH + 1) + "0")
    # A flat chain is not nesting: 1,365 operands, evaluated without deep recursion.
    chain = "+".join(["1"] * ((MAX_LENGTH + 1) // 2))
    assert len(chain) <= MAX_LENGTH
    assert parse(chain).evaluate(lookup) == (MAX_LENGTH + 1) // 2
    assert parse(" && ".join(["true"] * 500)).evaluate(lookup) is True
    with pytest.raises(ExpressionError, match="longer than 4096 characters"):
        parse(chain + "+1")


def test_deepest_accepted_expressions_need_a_small_stack() -> None:
    """MAX_DEPTH keeps parse and evaluate far below Python's recursion limit (1,000), with
    room for the caller's own frames: the deepest accepted shapes need under 250."""
    shapes = [
        "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH,
        "len(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH,
        "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH,
        "x ? 1 : " * MAX_DEPTH + "0",
        "len([-(" * (MAX_DEPTH // 4) + "x" + ")])" * (MAX_DEPTH // 4),
        "(x || x && x == x + x * -" * (MAX_DEPTH // 7) + "x" + ")" * (MAX_DEPTH // 7),
    ]
    frame, here = sys._getframe(), 0
    while frame is not None:
        frame, here = frame.f_back, here + 1  # type: ignore[assignment]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(here + 250)
    try:
        for text in shapes:
            expr = parse(text)
            with contextlib.suppress(EvaluationError):
                expr.evaluate(lambda _path: [1])
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), (False, False), (0, False), (0.0, False), ("", False), ([], False),
     (True, True), (-1, True), ("0", True), ([0], True), ({}, True), ({"a": 1}, True)],
)  # fmt: skip
def test_truthiness(value: Any, expected: bool) -> None:
    assert truthy(value) is expected
    assert parse("!x").evaluate(lambda _path: value) is (not expected)


TEMPLATES = [
    # Orch8's documented templates: a whole-string template keeps the JSON type
    ("{{context.data.count}}", 3),
    ("{{ context.data.items }}", DATA["context"]["data"]["items"]),
    ("{{item}}", {"sku": "A-1", "qty": 2}),
    ("{{context.data.flag}}", True),
    ("{{ context.data.nothing }}", None),
    ("Hello {{context.data.name}}", "Hello Alice"),
    ("{{context.data.name}}!", "Alice!"),
    (" {{context.data.count}}", " 3"),  # whitespace outside the braces: text
    ("{{ context.data.count }}/{{context.data.ratio}} {{item}}", '3/0.5 {"sku":"A-1","qty":2}'),
    ("[{{context.data.nothing}}] {{context.data.flag}}", "[] true"),
    ("{{ context.data.count * 2 }}", 6),
    ('{{ context.data.plan == "enterprise" ? "csm" : "self-serve" }}', "csm"),
    ('{{ "{{" }} literal }}', "{{ literal }}"),
    ('a {{ "}}" }} b', "a }} b"),
    ('{{ steps["my-step"].output.id }}', 7),
    ("{{ json(context.config) }}", '{"region":"eu"}'),
]


@pytest.mark.parametrize(("text", "expected"), TEMPLATES)
def test_renders_templates(text: str, expected: Any) -> None:
    template = parse_template(text)
    assert template is not None
    rendered = template.render(lookup)
    assert rendered == expected
    assert type(rendered) is type(expected)


def test_whole_means_exactly_one_template() -> None:
    assert parse_template("{{ a }}").whole  # type: ignore[union-attr]
    assert parse_template("{{a}}").whole  # type: ignore[union-attr]
    for text in (" {{a}}", "{{a}} ", "{{a}}{{b}}", "x{{a}}", '{{ "{{" }}'):
        template = parse_template(text)
        assert template is not None
        assert template.whole is (text == '{{ "{{" }}')
    assert parse_template("no braces") is None
    assert parse_template("single { brace } and }}") is None


TEMPLATE_ERRORS = [
    ("{{ x | upper }}", 5, "template filters (|) are not supported"),
    ('Hi {{ data.user.name | default("friend") }}', 21, "template filters (|)"),
    ("Hi {{ name", 3, "unclosed '{{': expected '}}'"),
    ("{{ a }} and {{ b", 12, "unclosed '{{'"),
    ("{{}}", 2, "expected an expression, found '}}'"),
    ("x {{ a b }}", 7, "expected an operator or the end of the expression, found 'b'"),
    ("x {{ a == }}", 10, "expected a value, found '}}'"),
    ('{{ "}} }}', 3, "unclosed string"),
    ("{{ a } }}", 5, "unexpected character '}'"),
    ("{{ eval(a) }}", 3, "unknown function 'eval'"),
]


@pytest.mark.parametrize(("text", "position", "message"), TEMPLATE_ERRORS)
def test_refuses_templates_at_definition(text: str, position: int, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse_template(text)
    assert message in caught.value.message
    assert caught.value.position == position


def test_strict_templates_name_the_missing_path() -> None:
    template = parse_template("id={{ context.data.user.id }}")
    assert template is not None
    with pytest.raises(MissingValue) as caught:
        template.render(lookup)
    assert caught.value.path == ("context", "data", "user", "id")
    assert isinstance(caught.value, KeyError)
    assert template.render(lookup, strict=False) == "id="
    # only the paths actually read count: the branch not taken may refer to nothing
    chosen = parse_template("{{ context.data.flag ? context.data.name : nowhere }}")
    assert chosen is not None and chosen.render(lookup) == "Alice"
    # an expression is never strict, even when its lookup comes from a strict template
    assert parse("context.data.user == null").evaluate(lookup) is True


def test_compile_value_renders_every_template_and_shares_the_rest() -> None:
    static = {"resolution": "1080p", "sizes": [1, 2]}
    params = {
        "input_url": "{{context.data.name}}",
        "count": "{{ context.data.count }}",
        "nested": {"list": ["{{item.sku}}", "plain", 5], "static": static},
        "a/b~c": "x{{context.config.region}}",
    }
    compiled = compile_value(params)
    assert compiled.paths() == [
        (("context", "data", "name"), "/input_url"),
        (("context", "data", "count"), "/count"),
        (("item", "sku"), "/nested/list/0"),
        (("context", "config", "region"), "/a~1b~0c"),
    ]
    rendered = compiled.render(lookup)
    assert rendered == {
        "input_url": "Alice",
        "count": 3,
        "nested": {"list": ["A-1", "plain", 5], "static": static},
        "a/b~c": "xeu",
    }
    assert rendered["nested"]["static"] is static  # not copied needlessly
    assert params["input_url"] == "{{context.data.name}}"  # the definition is untouched
    assert compile_value(static).render(lookup) is static
    assert compile_value("{{ context.data.tags }}").render(lookup) == ["vip", "beta"]
    with pytest.raises(MissingValue):
        compile_value({"u": "{{ context.data.url }}"}).render(lookup)
    assert compile_value({"u": "{{ context.data.url }}"}).render(lookup, strict=False) == {
        "u": None
    }


@pytest.mark.parametrize(
    ("value", "pointer", "position"),
    [({"params": {"url": "{{ a. }}"}}, "/params/url", 6),
     ({"input": [{"k": "ok"}, {"k~/": "{{ x | lower }}"}]}, "/input/1/k~0~1", 5),
     ("{{", "", 0)],
)  # fmt: skip
def test_compile_value_points_at_the_bad_string(value: Any, pointer: str, position: int) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_value(value)
    assert caught.value.pointer == pointer
    assert caught.value.position == position


def test_random_text_raises_only_expression_error() -> None:
    """Any printable string either parses or is an ExpressionError, never another error."""
    rng = random.Random(31)
    alphabet = string.printable + "é\u00a0\u0663"
    parsed = 0
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for attempt in (parse, parse_template):
            try:
                attempt(text)
                parsed += attempt is parse
            except ExpressionError:
                pass
    assert parsed > 0  # the generator does reach valid expressions


def test_random_token_soup_parses_or_refuses_and_evaluates_or_refuses() -> None:
    """Closer to the grammar: parse errors are ExpressionError, runtime ones EvaluationError."""
    rng = random.Random(2)
    pieces = ["a", "b.c", "x[0]", "1", "0", "2.5", '"s"', '""', "true", "null", "[", "]",
              "(", ")", ",", "!", "-", "+", "*", "/", "%", "==", "<", ">=", "&&", "||",
              "?", ":", " in ", "len(", "abs(", "json("]  # fmt: skip
    values: list[Any] = [None, True, 0, 3, -1.5, "", "s", [], [1, "s"], {}, {"k": 1}]
    evaluated = 0
    for _ in range(5000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        try:
            expr = parse(text)
        except ExpressionError:
            continue
        value = rng.choice(values)
        try:
            expr.evaluate(lambda _path, value=value: value)  # type: ignore[misc]
            evaluated += 1
        except EvaluationError:
            pass
    assert evaluated > 100  # the soup does reach evaluation
