-- Example rows for broker_auth_pgsql (EMQ X 3.x's examples). With the default
-- password_hash (sha256): user `dashboard` / password `public`, a superuser.
-- psql -U <user> -d mqtt -f plugins/broker_auth_pgsql/seed.sql

INSERT INTO mqtt_user (username, password, salt, is_superuser) VALUES
  ('dashboard', encode(sha256('public'::bytea), 'hex'), NULL, true);

-- The ACL rows EMQ X shipped: nobody subscribes to $SYS/# or to the exact
-- filter #; clients on 127.0.0.1 may publish anywhere; dashboard may read $SYS.
INSERT INTO mqtt_acl (allow, ipaddr, username, clientid, access, topic) VALUES
  (0, NULL, '$all', NULL, 1, '$SYS/#'),
  (0, NULL, '$all', NULL, 1, 'eq #'),
  (1, '127.0.0.1', NULL, NULL, 2, '$SYS/#'),
  (1, '127.0.0.1', NULL, NULL, 2, '#'),
  (1, NULL, 'dashboard', NULL, 1, '$SYS/#');
