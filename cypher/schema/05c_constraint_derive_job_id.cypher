// Uniqueness of a background derive job id (POST /groups/{id}/derive?background=true).
// Parameters: none. Returns nothing.
CREATE CONSTRAINT derive_job_id IF NOT EXISTS FOR (j:DeriveJob) REQUIRE j.id IS UNIQUE
