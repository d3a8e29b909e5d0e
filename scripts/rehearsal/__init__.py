"""The deploy rehearsal (`make rehearse`): docs/rehearsal.md says what it does,
and which module of this package does each part ("The code").

Nothing here imports chalicelib: the package is driven through its handlers and
events only, and every name comes from the template.
"""
