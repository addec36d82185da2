"""Views of a group for people: the conversation graph, the interaction summary, the timeline.

The library side of the graph page (:mod:`~graphmem.views.graph`), the summary
(:mod:`~graphmem.views.summary`) and the timeline plot (:mod:`~graphmem.views.timeline`);
:mod:`~graphmem.views.common` reads a group once for all three. No web framework here.
"""

from graphmem.views.common import (
    GROUP_COLOUR,
    LAYER_COLOURS,
    PERSON_COLOUR,
    SessionInfo,
    parse_layers,
)
from graphmem.views.graph import (
    ConversationGraph,
    GraphFilters,
    GraphNode,
    RecordEdge,
    TalkEdge,
    build_graph,
)
from graphmem.views.summary import DecisionEvent, GroupSummary, PersonSummary, summarize
from graphmem.views.timeline import (
    TIMELINE_LIST_MAX,
    Timeline,
    TimelineMark,
    build_timeline,
    render_timeline_png,
    require_plots,
)

__all__ = [
    "GROUP_COLOUR",
    "LAYER_COLOURS",
    "PERSON_COLOUR",
    "TIMELINE_LIST_MAX",
    "ConversationGraph",
    "DecisionEvent",
    "GraphFilters",
    "GraphNode",
    "GroupSummary",
    "PersonSummary",
    "RecordEdge",
    "SessionInfo",
    "TalkEdge",
    "Timeline",
    "TimelineMark",
    "build_graph",
    "build_timeline",
    "parse_layers",
    "render_timeline_png",
    "require_plots",
    "summarize",
]
