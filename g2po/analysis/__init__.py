"""The analyses the views and the CLI show: credit alarms, state-merge diagnostics, estimator
comparison, a run's history, step diffs, node labels and the graph layout.

They sit on top of the step table, the state graph and the estimators, and hold no Streamlit:
the app and ``g2po`` commands call the same functions.
"""
