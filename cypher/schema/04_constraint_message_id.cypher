// Uniqueness of Message.id within its group (ingest is idempotent by message id).
// Parameters: none. Returns nothing.
CREATE CONSTRAINT message_id IF NOT EXISTS FOR (m:Message) REQUIRE (m.group_id, m.id) IS UNIQUE
