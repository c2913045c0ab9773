"""Scale-out on Apache Spark: index building, cohort queries and exports where the data lives.

``build_index`` / ``add_to_index`` segment, annotate and embed reports in Spark executors and
commit one index generation on the driver; ``cohort`` runs a cohort query as Spark SQL over a
findings table; ``note_nlp`` shapes findings as OMOP NOTE_NLP rows.
"""

from clinsearch.spark.build import add_to_index, build_index
from clinsearch.spark.cohort import cohort
from clinsearch.spark.session import spark_session

__all__ = ["add_to_index", "build_index", "cohort", "spark_session"]
