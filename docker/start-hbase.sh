#!/bin/sh
# Standalone HBase in the background, then the Thrift2 gateway in the foreground, so the
# container lives as long as the gateway. The common images start Thrift1 (`hbase thrift`);
# this project needs Thrift2 (`hbase thrift2`), and only one of them may own port 9090.
set -e
/opt/hbase/bin/hbase-daemon.sh start master
# HBase's defaults, which the client's defaults match: threadpool server, unframed (buffered)
# transport, binary protocol. Do not add -f/-c/-hsha here without changing HBaseConfig too.
exec /opt/hbase/bin/hbase thrift2 start -p 9090 --infoport 9095
