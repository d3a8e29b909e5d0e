"""The deploy rehearsal (`make rehearse`): docs/rehearsal.md says what it does, and
which module does each part ("The code"). Nothing here imports chalicelib.
"""
