// Range index for session anchors: a group's sessions with a given index ("the third session")
// are one seek (recall/window_messages) instead of a walk over every session of the group,
// whose count grows with the group (a chat export holds one session per day). Parameters: none.
CREATE INDEX session_group_index IF NOT EXISTS FOR (s:Session) ON (s.group_id, s.index)
