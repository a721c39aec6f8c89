// broker_auth_pgsql against a real server and a real node: server down at start, killed and restarted, pool exhaustion.
import t from 'tap'
import { resilienceTests } from '../../../test/access/backend/sql-suite.js'
import { target } from './target.js'

resilienceTests(t, target)
