"""The analysis written into a league game record, read back, and checked (docs/game-records.md
"Analysis").

    <header> … <analysis version="1" nodes="12000" slope="0.00203" turning-point="17"/>
    <player> … <analysis accuracy="91.4" inaccuracies="1" mistakes="0" blunders="1" only-moves="0"/>
    <move> … <analysis eval="-35" played="-210" loss="0.162" mark="??" depth="4">
               <best x="8" y="2" direction="LEFT"/></analysis>

Everything of the record but the `<analysis>` elements stays as it was; `league.records`
ignores them (so `verify` of the game itself is unchanged). `check` recomputes every figure
that follows from the per-move evaluations (loss, mark, accuracies, turning point) and that
each best move is legal — a tampered annotation shows — and, given an `Analyser`, searches
again with the recorded settings (deterministic) and reports every difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from analysis import model
from analysis.game import VERSION, Analyser, AnalysisError, Game, GameAnalysis, Settings, summarise
from analysis.sources import SourceError, game_from_record
from bots.search import RootAnalysis
from engine import Direction, Move
from league.records import MAX_RECORD_BYTES, Discrepancy

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
)


class AnnotationError(Exception):
    """A record whose annotation cannot be read; the message says where."""


def _parse(data: bytes) -> etree._Element:
    if len(data) > MAX_RECORD_BYTES:
        raise AnnotationError(f"larger than {MAX_RECORD_BYTES} bytes")
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as error:
        raise AnnotationError(f"not well-formed XML: {error}") from None
    if root.tag != "game":
        raise AnnotationError(f"the root element is <{root.tag}>, not <game>")
    return root


def _format(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") or "0"


def annotate(data: bytes, analysis: GameAnalysis) -> bytes:
    """The record `data` with `analysis` written in (an earlier annotation is replaced)."""
    root = _parse(data)
    for old in root.iter("analysis"):
        old.getparent().remove(old)  # type: ignore[union-attr]
    header = root.find("header")
    if header is None:
        raise AnnotationError("the record has no <header>")
    settings = etree.SubElement(header, "analysis")
    settings.set("version", str(VERSION))
    if analysis.settings.nodes is not None:
        settings.set("nodes", str(analysis.settings.nodes))
    if analysis.settings.depth is not None:
        settings.set("depth", str(analysis.settings.depth))
    settings.set("slope", repr(model.SLOPE))
    if analysis.turning_point is not None:
        settings.set("turning-point", str(analysis.moves[analysis.turning_point].number))
    by_side = {summary.side.name: summary for summary in analysis.sides}
    for player in root.findall("player"):
        summary = by_side.get((player.findtext("side") or "").strip())
        if summary is None:
            continue
        element = etree.SubElement(player, "analysis")
        if summary.accuracy is not None:
            element.set("accuracy", f"{summary.accuracy:.1f}")
        element.set("inaccuracies", str(summary.inaccuracies))
        element.set("mistakes", str(summary.mistakes))
        element.set("blunders", str(summary.blunders))
        element.set("only-moves", str(summary.only_moves))
    for block, move in zip(root.findall("move"), analysis.moves, strict=False):
        element = etree.SubElement(block, "analysis")
        element.set("eval", str(move.eval_best))
        element.set("played", str(move.eval_played))
        element.set("loss", _format(move.loss))
        if move.mark is not None:
            element.set("mark", move.mark)
        element.set("depth", str(move.depth))
        if move.previous is not None and move.previous[1] is not None:
            element.set("shallower", f"{move.previous[0]} {move.previous[1]}")
        best = etree.SubElement(element, "best")
        best.set("x", str(move.best.x))
        best.set("y", str(move.best.y))
        best.set("direction", move.best.direction.name)
    for element in root.iter():
        element.tail = None
        if len(element):
            element.text = None
    etree.indent(root, space="  ")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


@dataclass(frozen=True)
class Annotation:
    """What an annotated record says: the settings, per move the search's answer as written
    (mark and loss as written too), per side the figures as written."""

    settings: Settings
    turning_point: int | None  # the move number
    moves: tuple[tuple[RootAnalysis, str | None, str], ...]  # answer, mark, loss text
    sides: dict[str, dict[str, str]]


def _int(element: etree._Element, name: str) -> int:
    text = element.get(name)
    try:
        return int(text or "")
    except ValueError:
        raise AnnotationError(
            f"line {element.sourceline}: <analysis> {name} is not an integer: {text!r}"
        ) from None


def read_annotation(data: bytes) -> Annotation | None:
    """The annotation of a record (None when it has none). AnnotationError when malformed."""
    root = _parse(data)
    header = root.find("header")
    settings_element = None if header is None else header.find("analysis")
    if settings_element is None:
        return None
    if settings_element.get("version") != str(VERSION):
        raise AnnotationError(
            f"line {settings_element.sourceline}: analysis version "
            f"{settings_element.get('version')!r} (this tool writes {VERSION})"
        )
    try:
        settings = Settings(
            nodes=_int(settings_element, "nodes") if settings_element.get("nodes") else None,
            depth=_int(settings_element, "depth") if settings_element.get("depth") else None,
        )
    except AnalysisError as error:
        raise AnnotationError(f"line {settings_element.sourceline}: {error}") from None
    turning = settings_element.get("turning-point")
    moves = []
    for block in root.findall("move"):
        element = block.find("analysis")
        if element is None:
            break
        best = element.find("best")
        if best is None:
            raise AnnotationError(f"line {element.sourceline}: <analysis> has no <best>")
        try:
            direction = Direction[best.get("direction") or ""]
        except KeyError:
            raise AnnotationError(
                f"line {best.sourceline}: unknown direction {best.get('direction')!r}"
            ) from None
        start = block.find("from")
        direction_text = (block.findtext("direction") or "").strip()
        if start is None or direction_text not in Direction.__members__:
            raise AnnotationError(f"line {block.sourceline}: a <move> without its move")
        played = Move(_int(start, "x"), _int(start, "y"), Direction[direction_text])
        previous = None
        shallower = (element.get("shallower") or "").split()
        if shallower:
            try:
                previous = (int(shallower[0]), int(shallower[1]))
            except (ValueError, IndexError):
                raise AnnotationError(
                    f"line {element.sourceline}: shallower must be two integers"
                ) from None
        answer = RootAnalysis(
            previous=previous,
            depth=_int(element, "depth"),
            nodes=0,
            best=Move(_int(best, "x"), _int(best, "y"), direction),
            best_score=_int(element, "eval"),
            played=played,
            played_score=_int(element, "played"),
            only_move=element.get("mark") == "!",
        )
        moves.append((answer, element.get("mark"), element.get("loss") or ""))
    sides: dict[str, dict[str, str]] = {}
    for player in root.findall("player"):
        element = player.find("analysis")
        if element is not None:
            sides[(player.findtext("side") or "").strip()] = {
                str(key): str(value) for key, value in element.attrib.items()
            }
    return Annotation(
        settings,
        None if turning is None else _int(settings_element, "turning-point"),
        tuple(moves),
        sides,
    )


def check(data: bytes, label: str, *, recompute: bool = False) -> list[Discrepancy]:
    """Every way the record's annotation differs from what its evaluations imply (and, with
    `recompute`, from a new analysis at the recorded settings: deterministic, so any
    difference is a tampered or a stale annotation). Empty without an annotation or when it
    is right. The record itself is `league.records.verify`'s business."""
    found: list[Discrepancy] = []

    def report(item: str, recorded: object, correct: object) -> None:
        found.append(Discrepancy(label, item, str(recorded), str(correct)))

    try:
        annotation = read_annotation(data)
        if annotation is None:
            return []
        _, game = game_from_record(data, label)
    except (AnnotationError, SourceError) as error:
        return [Discrepancy(label, "analysis", "unreadable", str(error))]
    if len(annotation.moves) != len(game.moves):
        report("analysis", f"{len(annotation.moves)} moves annotated", f"{len(game.moves)} moves")
        return found
    states = game.states()
    answers = []
    for number, ((answer, _, _), state) in enumerate(
        zip(annotation.moves, states, strict=False), 1
    ):
        if state.check_move(answer.best) is not None:
            report(f"analysis of move {number}", f"best {answer.best}", "an illegal move")
            return found
        answers.append(answer)
    implied = summarise(game, annotation.settings, states, answers)
    _compare(annotation, implied, report)
    if recompute and not found:
        with Analyser(annotation.settings) as analyser:
            again = analyser.analyse(game)
        for number, (written, new) in enumerate(zip(answers, again.moves, strict=True), 1):
            if (written.best, written.best_score, written.played_score, written.previous) != (
                new.best,
                new.eval_best,
                new.eval_played,
                new.previous,
            ):
                report(
                    f"analysis of move {number}",
                    f"best {written.best} eval {written.best_score} played {written.played_score}",
                    f"best {new.best} eval {new.eval_best} played {new.eval_played}",
                )
        if not found:
            _compare(annotation, again, report, marks_only=True)
    return found


def _compare(
    annotation: Annotation,
    implied: GameAnalysis,
    report: Callable[[str, object, object], None],
    marks_only: bool = False,
) -> None:
    for number, ((_, mark, loss), move) in enumerate(
        zip(annotation.moves, implied.moves, strict=True), 1
    ):
        # Read back, a written `!` is taken as the only-move answer; recomputed, it is checked.
        if mark != move.mark:
            report(f"mark of move {number}", mark or "none", move.mark or "none")
        if not marks_only and loss != _format(move.loss):
            report(f"loss of move {number}", loss, _format(move.loss))
    if marks_only:
        return
    for summary in implied.sides:
        written = annotation.sides.get(summary.side.name, {})
        accuracy = "" if summary.accuracy is None else f"{summary.accuracy:.1f}"
        if written.get("accuracy", "") != accuracy:
            report(f"accuracy of {summary.side.name}", written.get("accuracy", ""), accuracy)
        for key, value in (
            ("inaccuracies", summary.inaccuracies),
            ("mistakes", summary.mistakes),
            ("blunders", summary.blunders),
        ):
            if written.get(key) != str(value):
                report(f"{key} of {summary.side.name}", written.get(key), value)
    turning = None
    if implied.turning_point is not None:
        turning = implied.moves[implied.turning_point].number
    if annotation.turning_point != turning:
        report("turning point", annotation.turning_point, turning)


def analysed_game(data: bytes, label: str) -> Game:
    """The game of a record (for callers that annotate: load, analyse, `annotate`)."""
    try:
        return game_from_record(data, label)[1]
    except SourceError as error:
        raise AnnotationError(str(error)) from None


__all__ = [
    "Annotation",
    "AnnotationError",
    "analysed_game",
    "annotate",
    "check",
    "read_annotation",
]
