"""The figures' shared layout: fixed margins, legends below the axes, PNG and PDF files.

Used by :mod:`.figures` (the single study) and by :mod:`.sweeps.store` (a sweep's panels).  It sets
no backend: :mod:`.figures` and the command line choose Agg (files only), while a sweep's
figures drawn in a notebook or a Python session keep the user's backend.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt

if TYPE_CHECKING:
    from .files import Directory

#: Legend entries per row under an axes, and the height of one row (inches, fontsize 7).
LEGEND_COLUMNS, LEGEND_ROW = 2, 0.16
#: The height each second or later line of a wrapped legend label adds (inches, fontsize 7:
#: measured, 0.142 with matplotlib's default font).
LEGEND_LINE = 0.145
#: A legend entry's width besides its label's text (in font sizes): its handle, the space after
#: it and the legend's border.
LEGEND_ENTRY_ROOM = 3.5
#: A panel's axes (inches) and the room under it for the x tick labels and label (inches).
PANEL, XLABEL_ROOM = (4.3, 3.0), 0.5
#: Where :func:`legend_below` puts a legend under a panel of :func:`panel_axes` (axes fraction).
PANEL_LEGEND_OFFSET = -XLABEL_ROOM / PANEL[1]


def save_figure(fig, out: Path | Directory, name: str) -> list[Path]:
    """``out/name.png`` (150 dpi) and ``out/name.pdf``, each written whole by a rename, never
    through a symbolic link (:meth:`~sege_cvx.experiments.files.Directory.write`; ``out`` may be
    an open directory); the figure is closed."""
    from .files import Directory

    if not isinstance(out, Directory):
        with Directory(out, f"{str(out)!r}") as directory:
            return save_figure(fig, directory, name)
    paths = []
    for kind in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=kind, dpi=150)
        out.write(f"{name}.{kind}", buffer.getvalue())
        paths.append(out.path / f"{name}.{kind}")
    plt.close(fig)
    return paths


#: The height of each line of a title after its second (inches, fontsize 9, as
#: :func:`title_lines` draws a title of more than one line).
TITLE_LINE = 0.19


def single_axes(figsize=(5.2, 3.8), bottom=0.226, top=0.9, legend_rows=2, title_lines=1):
    """A figure with room below the axes for the x label and a legend of ``legend_rows`` rows,
    and none to spare (the default: axes 2.56 in high, 0.86 in below them for two rows; each
    row more makes the figure :data:`LEGEND_ROW` taller), and above them for a title of
    ``title_lines`` lines (two fit; each line more makes the figure :data:`TITLE_LINE`
    taller): fixed margins, because a computed layout (bbox_inches="tight", tight or
    constrained layout) draws every figure once more."""
    width, height = figsize
    extra = max(legend_rows - 2, 0) * LEGEND_ROW
    taller = max(title_lines - 2, 0) * TITLE_LINE
    above, total = (1.0 - top) * height + taller, height + extra + taller
    fig, ax = plt.subplots(figsize=(width, total))
    fig.subplots_adjust(left=0.15, right=0.97, bottom=(bottom * height + extra) / total,
                        top=1.0 - above / total)
    return fig, ax


def title_lines(head: str, tail: str, width: float, fontsize=None) -> tuple[str, float | str]:
    """A title that fits its axes' width, and its font size.

    Parameters
    ----------
    head, tail : str
        The title is ``head tail``; ``head`` may be long (a policy's import path), ``tail``
        is short.
    width : float
        The widest a line may be, in inches.
    fontsize : float or str, optional
        The size wanted (default matplotlib's for a title).

    Returns
    -------
    title : str
        ``head tail`` on one line where it fits at ``fontsize`` (``tail`` alone without
        ``head``); else ``head`` wrapped to ``width`` (:func:`wrap_text`) and ``tail`` on a
        line of its own.
    fontsize : float or str
        ``fontsize`` for one line; 9 for more.
    """
    from matplotlib.font_manager import FontProperties

    fontsize = fontsize or plt.rcParams["axes.titlesize"]
    points = FontProperties(size=fontsize).get_size_in_points()  # "large" in points
    text = f"{head} {tail}" if head else tail
    if not head or text_width(text, points) <= width:
        return text, fontsize
    return f"{wrap_text(head, width, 9)}\n{tail}", 9


def panel_axes(n: int, legend_rows: int, title_lines: int = 1, suptitle: bool = True,
               figure_legend_rows: int = 0):
    """``n`` panels, each with room above for a title of ``title_lines`` lines and below for a
    legend of ``legend_rows`` rows, and room at the bottom of the figure for one legend of
    ``figure_legend_rows`` rows: margins fixed in inches (whatever ``n``), as
    :func:`single_axes` does.  Up to three panels make a row; four make two rows of two.

    Returns the figure and a flat list of ``n`` axes (spare grid cells are removed); put each
    legend at ``legend_below(ax, offset=PANEL_LEGEND_OFFSET)``, or the figure's with
    :func:`figure_legend`.
    """
    panel = PANEL
    ncols = 2 if n == 4 else min(n, 3)
    nrows = math.ceil(n / ncols)
    left, right, gap = 0.75, 0.2, 0.55           # inches: y tick labels and label; between panels
    title = 0.2 + 0.18 * title_lines             # each panel's title
    top = title + (0.6 if suptitle else 0.0)     # the figure's two-line title above the first row
    below = XLABEL_ROOM + legend_rows * LEGEND_ROW + 0.1  # x tick labels and label, then the legend
    extra = figure_legend_rows * LEGEND_ROW + (0.05 if figure_legend_rows else 0.0)
    width = left + right + ncols * panel[0] + (ncols - 1) * gap
    height = top + nrows * (panel[1] + below) + (nrows - 1) * title + extra
    fig, grid = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                        bottom=(below + extra) / height, wspace=gap / panel[0],
                        hspace=(below + title) / panel[1])
    axes = list(grid.ravel())
    for ax in axes[n:]:
        fig.delaxes(ax)
    return fig, axes[:n]


def figure_legend(fig, handles, labels, ncol: int = LEGEND_COLUMNS) -> None:
    """One legend for the whole figure, at its bottom (the room :func:`panel_axes` keeps with
    ``figure_legend_rows``), laid out as :func:`legend_below` lays out a panel's."""
    fig.legend(handles, labels, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 0.0),
               ncol=ncol, frameon=False)


def legend_below(ax, handles=None, labels=None, offset=-0.17, ncol: int = LEGEND_COLUMNS) -> None:
    """The legend under the axes, where it hides no data (the band's edge near b included).

    ``offset`` is the legend's top in axes fractions below the axes (room for the x label);
    ``ncol`` entries a row (:func:`legend_columns`).
    """
    args = () if handles is None else (handles, labels)
    ax.legend(*args, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, offset),
              ncol=ncol, frameon=False)


def text_width(text: str, fontsize: float) -> float:
    """The width of ``text``'s widest line as matplotlib lays it out (the font's advance widths,
    or mathtext's layout of a ``$...$`` line): no figure is drawn, nor an artist made.

    Parameters
    ----------
    text : str
        The text; lines separated by ``"\\n"``.
    fontsize : float
        Its size in points.

    Returns
    -------
    float
        Inches.
    """
    from matplotlib.cbook import is_math_text
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(size=fontsize)
    # A third of a millisecond a line, where a TextPath (an artist and the glyphs' outlines)
    # took 10.
    return max((text_to_path.get_text_width_height_descent(line, prop, is_math_text(line))[0]
                / 72.0 for line in str(text).split("\n") if line), default=0.0)


def legend_columns(labels, width: float, fontsize: float = 7.0) -> int:
    """Entries per row for a legend of ``labels`` in ``width`` inches: :data:`LEGEND_COLUMNS`
    if they fit side by side, else one (whose labels :func:`legend_labels` wraps to the
    width).  Text widths as :func:`text_width` measures them, with the legend's handle and
    spacing (:data:`LEGEND_ENTRY_ROOM` font sizes an entry)."""
    widest = max((text_width(label, fontsize) for label in labels), default=0.0)
    entry = widest + LEGEND_ENTRY_ROOM * fontsize / 72.0
    return LEGEND_COLUMNS if LEGEND_COLUMNS * entry <= width else 1


class _Breaks(textwrap.TextWrapper):
    """Lines broken at spaces and after ``.``, ``:`` and ``,``: an import path's own joints."""

    # textwrap breaks only at whitespace (and hyphens); an import path has none.  Zero-width
    # matches split the text without taking a character out of it.
    wordsep_simple_re = re.compile(r"(\s+|(?<=[.:,])(?=\S))")


class _FinerBreaks(textwrap.TextWrapper):
    """:class:`_Breaks`' joints, and after ``_`` and ``/`` and between a lower-case letter or
    digit and a capital (``LongPolicy|ClassName``): for a class name too long for a line."""

    wordsep_simple_re = re.compile(r"(\s+|(?<=[.:,_/])(?=\S)|(?<=[a-z0-9])(?=[A-Z]))")


def wrap_text(text: str, width: float, fontsize: float) -> str:
    """``text`` with line breaks where a line would be wider than ``width`` inches at
    ``fontsize`` (:func:`text_width`), so that a long policy name (an import path of 90
    characters) is shown whole rather than cut at the canvas's edge.

    Parameters
    ----------
    text : str
        A label or title; its own line breaks are kept.
    width : float
        The widest a line may be, in inches.
    fontsize : float
        The size the text is drawn at, in points.

    Returns
    -------
    str
        ``text`` itself where it fits or holds mathtext (``$b_0$``: a break inside it would
        not parse); else broken at spaces and after ``.``, ``:`` and ``,``, and only where
        that is not enough within a name too (between its words, or anywhere): no character
        is left out but the spaces a break replaces.
    """
    if "$" in text or text_width(text, fontsize) <= width:
        return text
    lines = []
    for line in text.split("\n"):
        measured = text_width(line, fontsize)
        # textwrap counts characters: start from as many as fit on average, fewer until each
        # line fits as drawn.
        start = max(int(len(line) * width / measured), 1) if measured > width else len(line)
        best = None
        for wrapper, long_words in ((_Breaks, False), (_FinerBreaks, True)):
            for chars in range(start, 0, -1):
                parts = wrapper(width=chars, break_long_words=long_words,
                                break_on_hyphens=False).wrap(line) or [""]
                if all(text_width(part, fontsize) <= width for part in parts):
                    best = parts
                    break
                if not long_words and max(map(len, parts)) > chars:
                    break  # a joint-less piece wider than the line: finer breaks needed
            if best is not None:
                break
        lines += best if best is not None else [line]
    return "\n".join(lines)


def legend_labels(labels, width: float, ncol: int, fontsize: float = 7.0) -> list[str]:
    """A legend's labels wrapped to its width (:func:`wrap_text`).

    Parameters
    ----------
    labels : iterable of str
        The legend's labels.
    width : float
        The legend's width in inches.
    ncol : int
        Its entries a row (:func:`legend_columns`).
    fontsize : float
        Its labels' size in points.

    Returns
    -------
    list of str
        Each label with line breaks where it would be wider than its entry's share of
        ``width``, less the entry's handle and spacing (:data:`LEGEND_ENTRY_ROOM`).
    """
    room = width / ncol - LEGEND_ENTRY_ROOM * fontsize / 72.0
    return [wrap_text(str(label), room, fontsize) for label in labels]


def legend_rows(labels, ncol: int) -> float:
    """The height of a legend, in rows of :data:`LEGEND_ROW`, for :func:`panel_axes` and
    :func:`single_axes`.

    Parameters
    ----------
    labels : iterable of str
        Its labels, as :func:`legend_labels` wraps them.
    ncol : int
        Its entries a row.

    Returns
    -------
    float
        A row for each ``ncol`` entries, and :data:`LEGEND_LINE` more for each second or later
        line of a label (wrapped labels are in a one-column legend).
    """
    labels = list(labels)
    extra = sum(str(label).count("\n") for label in labels)
    return math.ceil(len(labels) / ncol) + extra * LEGEND_LINE / LEGEND_ROW


def layout_problems(fig) -> list[str]:
    """What a reader of ``fig`` would find cut or covered, one line each (empty: none).

    The figure is drawn (on an Agg canvas), then the drawn text is gathered: each axes' title,
    axis labels and the tick labels within its limits, the figure's title and texts, and every
    legend as one box.  Reported: any of them reaching outside the canvas; a legend overlapping
    another text or another legend, or lying over an axes that is not its own."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes: list[tuple[str, object, object]] = []  # (what, owner, bbox in pixels)

    def add(what, owner, artist):
        if artist is not None and artist.get_visible() and (
                not hasattr(artist, "get_text") or artist.get_text().strip()):
            boxes.append((what, owner, artist.get_window_extent(renderer)))

    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        name = f"axes {k}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        for title in (ax.title, ax._left_title, ax._right_title):
            add(f"{name} title {title.get_text()!r}", ax, title)
        add(f"{name} x label", ax, ax.xaxis.label)
        add(f"{name} y label", ax, ax.yaxis.label)
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            low, high = min(limits), max(limits)
            span = (high - low) * 1e-9
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if low - span <= tick.get_loc() <= high + span and tick.label1.get_visible():
                    add(f"{name} tick label {tick.label1.get_text()!r}", ax, tick.label1)
        for text in ax.texts:
            add(f"{name} text {text.get_text()!r}", ax, text)
        add(f"{name} legend", ax, ax.get_legend())
    add(f"the figure's title {fig._suptitle.get_text()!r}" if fig._suptitle else "", fig,
        fig._suptitle)
    for text in fig.texts:
        add(f"figure text {text.get_text()!r}", fig, text)
    for legend in fig.legends:
        add("the figure's legend", fig, legend)

    problems = []
    canvas = fig.bbox
    for what, _, box in boxes:
        if (box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1
                or box.y1 > canvas.y1 + 1):
            problems.append(f"{what} reaches outside the canvas")
    legends = [(what, owner, box) for what, owner, box in boxes if what.endswith("legend")]
    for what, owner, box in legends:
        for other, _, other_box in boxes:
            if other == what or not box.overlaps(other_box):
                continue
            if other.endswith("legend") and other < what:
                continue  # each pair once
            problems.append(f"{what} overlaps {other}")
        for k, ax in enumerate(fig.axes):
            if ax is not owner and ax.get_visible() and box.overlaps(ax.bbox):
                problems.append(f"{what} lies over axes {k}")
    return problems


class LineStyles:
    """One colour, line style and marker per legend label, the same in every panel and figure,
    and no two labels alike.

    An algorithm's first label gets its registered colour (``preferred``); its other labels,
    and algorithms without one, get colours no algorithm is registered with; an algorithm's
    k-th label gets the k-th line style, so that two settings with the same curve (a parameter
    that changes nothing) both show.  Once every colour is drawn, a label gets the first
    (colour, line style) no label has, its algorithm's k-th line style first; once each of
    those is drawn too, a marker as well (:data:`MARKERS`): 192 labels are told apart.
    """

    PALETTE = ("tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan",
               "tab:blue", "tab:green")  # no red, gray or black: the reference lines'
    LINESTYLES = ("-", "--", "-.", ":")
    #: Markers ("": none) that tell lines apart when colours and line styles are all drawn.
    MARKERS = ("", "o", "s", "^", "v", "D")

    def __init__(self, preferred: dict[str, str], algorithms):
        self.preferred = {a: preferred[a] for a in algorithms if a in preferred}
        self.given: dict[str, tuple[str, str, str]] = {}
        self.count: dict[str, int] = {}

    def __call__(self, label: str, algorithm: str) -> tuple[str, str, str]:
        """The ``(colour, linestyle, marker)`` of ``label``, a line of ``algorithm``.

        Parameters
        ----------
        label : str
            The line's legend label: the same label, the same style.
        algorithm : str
            The algorithm it draws (its registered colour, and its count of labels).

        Returns
        -------
        tuple of str
            A matplotlib colour, line style and marker (``""``: none); no other label of
            this object has the same three, up to 192 labels.
        """
        if label not in self.given:
            k = self.count[algorithm] = self.count.get(algorithm, -1) + 1
            self.given[label] = self._new(algorithm, k)
        return self.given[label]

    def _new(self, algorithm: str, k: int) -> tuple[str, str, str]:
        used = set(self.given.values())
        colors = {color for color, _, _ in used}
        n = len(self.LINESTYLES)
        style = self.LINESTYLES[k % n]
        want = self.preferred.get(algorithm)
        if want is not None and want not in colors:
            return want, style, ""
        registered = set(self.preferred.values())
        free = [c for c in self.PALETTE if c not in colors and c not in registered]
        if free:
            return free[0], style, ""
        # Every colour drawn: cycling through them gave two labels the same colour and style
        # (8 colours, 4 styles) as soon as a panel held more than 8 lines.  Registered colours
        # last, so that an algorithm's colour keeps pointing at it as long as it can.
        palette = [c for c in self.PALETTE if c not in registered] + [
            c for c in self.PALETTE if c in registered] + [
            c for c in registered if c not in self.PALETTE]
        styles = self.LINESTYLES[k % n:] + self.LINESTYLES[:k % n]
        for marker in self.MARKERS:
            for linestyle in styles:
                for color in palette:
                    if (color, linestyle, marker) not in used:
                        return color, linestyle, marker
        return palette[len(self.given) % len(palette)], style, ""  # past 192 labels: repeats
