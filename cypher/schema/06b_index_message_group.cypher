// Range index on Message.group_id: a group's messages are found without scanning the store
// (the composite (group_id, id) and (group_id, turn_created) indexes are not used for an
// equality on group_id alone). Parameters: none.
CREATE INDEX message_group IF NOT EXISTS FOR (m:Message) ON (m.group_id)
