// Uniqueness of Session.id within its group. Parameters: none. Returns nothing.
CREATE CONSTRAINT session_id IF NOT EXISTS FOR (s:Session) REQUIRE (s.group_id, s.id) IS UNIQUE
