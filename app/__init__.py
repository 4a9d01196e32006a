"""The Streamlit app: inspect G2PO state graphs and advantages, compare estimators.

``streamlit run app/main.py`` is the entry (it warms the server up, then draws
:func:`app.shell.run` on every script run). The modules here hold no algorithm: graphs,
values and advantages come from :mod:`g2po`, logs from :mod:`loaders`. Pure helpers (layout,
tables, charts, diagnostics) are importable without Streamlit so tests can call them.
"""
