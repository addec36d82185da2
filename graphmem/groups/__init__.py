"""Groups: the service that appends, derives a step and forgets (:mod:`~graphmem.groups.service`)
and background derive jobs (:mod:`~graphmem.groups.jobs`). Layer 4.
"""
