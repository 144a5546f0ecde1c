"""The audit pipeline's Spark side: the export's schema and storage, and the PySpark report
jobs. No Django here (an import-linter contract keeps it so): the jobs run under plain
`spark-submit` as well as from `manage.py audit_report`."""
