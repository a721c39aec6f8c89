#!/usr/bin/env bash
# Records the changes made in node_modules/aedes as the next numbered engine
# patch, with the marker file the node checks at start (docs/architecture.md).
#   bash scripts/engine-patch.sh <short-name>
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: engine-patch.sh <short-name>}
before=$(ls patches/aedes+*.patch)
npx patch-package aedes --append "$name"
file=$(comm -13 <(echo "$before") <(ls patches/aedes+*.patch))
[ -n "$file" ] || { echo "no new patch was written" >&2; exit 1; }
seq=$(sed -E 's/^patches\/aedes\+[^+]+\+([0-9]+)\+.*/\1/' <<<"$file")
marker="$seq-$name"
mkdir -p node_modules/aedes/broker-patches
echo "$seq $name" > "node_modules/aedes/broker-patches/$marker"
cat >> "$file" <<HUNK
diff --git a/node_modules/aedes/broker-patches/$marker b/node_modules/aedes/broker-patches/$marker
new file mode 100644
--- /dev/null
+++ b/node_modules/aedes/broker-patches/$marker
@@ -0,0 +1 @@
+$seq $name
HUNK
echo "wrote $file (marker broker-patches/$marker)"
