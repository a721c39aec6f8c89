// broker_auth_pgsql against a real server and a real node: every mqtt_acl row form.
import t from 'tap'
import { aclTests } from '../../../test/access/backend/sql-suite.js'
import { target } from './target.js'

aclTests(t, target)
