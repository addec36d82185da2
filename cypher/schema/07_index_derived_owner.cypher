// Range index for reading a group's derived heads. Parameters: none.
CREATE INDEX derived_state IF NOT EXISTS FOR (d:Derived) ON (d.group_id, d.state)
