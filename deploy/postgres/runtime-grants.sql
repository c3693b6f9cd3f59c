-- The grants of a runtime role (the api's or the relay's): data access to
-- the tables and sequences `migrate` creates, and nothing else: no DDL, no
-- TRUNCATE, no ownership, so a compromised or buggy process cannot change
-- or drop the schema. Run it as the owner role (the one `migrate` runs as)
-- once per runtime role, after the first `migrate up`:
--
--   psql "$OWNER_URL" -v owner=app_owner -v role=app_api -f deploy/postgres/runtime-grants.sql
--
-- The default privileges cover the tables later migrations create, so a
-- release needs no new grants. The roles themselves (LOGIN, NOSUPERUSER)
-- are created by the platform; `apps/relay` TestE2EManagedDatabase runs the
-- api and the relay as such roles.
GRANT USAGE ON SCHEMA public TO :"role";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"role";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"role";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"role";
