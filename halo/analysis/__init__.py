"""Analyses of the loop IR; none of them changes the program.

    simplify/      the simplifier (`simplify`, `can_prove`)
    interval.py    interval arithmetic over symbolic expressions (`bounds_of_expr`)
    boxes.py       regions of a Func that a statement reads or writes (`boxes_touched`,
                   `boxes_touched_each` for several in one walk)
"""
