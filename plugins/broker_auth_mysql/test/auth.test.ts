// broker_auth_mysql against a real server and a real node: allow, deny, ignore, superuser, every hash and salt position, SQL injection.
import t from 'tap'
import { authTests } from '../../../test/access/backend/sql-suite.js'
import { target } from './target.js'

authTests(t, target)
