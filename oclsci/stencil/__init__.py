"""Your own stencil: a NumPy-style update, written as a restricted Python expression, run as
an OpenCL kernel whose results equal a NumPy reference bit for bit (docs/stencil.md).

- :mod:`~oclsci.stencil.language`: the expression language (:func:`parse`, what it refuses);
- :mod:`~oclsci.stencil.problem`: a run's inputs, checked and rounded to the field's dtype;
- :mod:`~oclsci.stencil.reference`: the NumPy reference.
"""
