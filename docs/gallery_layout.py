"""The gallery's image scraper: sphinx-gallery's matplotlib scraper, after each figure is checked
for text cut at the canvas's edge and legends over other text (the check the package's own
figures pass in ``tests/experiments/test_figure_layout.py``).  A figure that fails stops the
build, naming the example, the figure and what is cut or covered."""

import matplotlib.pyplot as plt
from sphinx_gallery.scrapers import matplotlib_scraper

from sege_cvx.experiments._plotting import layout_problems


def checked_matplotlib_scraper(block, block_vars, gallery_conf, **kwargs):
    for number in plt.get_fignums():
        problems = layout_problems(plt.figure(number))
        if problems:
            raise RuntimeError(f"{block_vars['src_file']}: figure {number}: "
                               + "; ".join(problems))
    return matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
