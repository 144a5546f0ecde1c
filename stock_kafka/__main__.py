"""`python -m stock_kafka`: Kafka's classes from the installed jars (see stock_kafka.jars)."""

import sys

from stock_kafka.jars import main

sys.exit(main())
