-- Example rows for broker_auth_mysql (EMQ X 3.x's examples). With the default
-- password_hash (sha256): user `dashboard` / password `public`, a superuser.
-- mysql -u root -p mqtt < plugins/broker_auth_mysql/seed.sql

INSERT INTO mqtt_user (username, password, salt, is_superuser, created) VALUES
  ('dashboard', SHA2('public', 256), NULL, 1, NOW());

-- The ACL rows EMQ X shipped: nobody subscribes to $SYS/# or to the exact
-- filter #; clients on 127.0.0.1 may publish anywhere; dashboard may read $SYS.
INSERT INTO mqtt_acl (allow, ipaddr, username, clientid, access, topic) VALUES
  (0, NULL, '$all', NULL, 1, '$SYS/#'),
  (0, NULL, '$all', NULL, 1, 'eq #'),
  (1, '127.0.0.1', NULL, NULL, 2, '$SYS/#'),
  (1, '127.0.0.1', NULL, NULL, 2, '#'),
  (1, NULL, 'dashboard', NULL, 1, '$SYS/#');
