"""A Streamlit page for the browser test of :func:`app.safe.fmt`: every text of
:data:`tests.app.builders.MARKDOWN_CASES` through ``fmt`` in each kind of element that renders
markdown (``streamlit run tests/app/markdown_page.py``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamlit as st  # noqa: E402

from app.safe import fmt  # noqa: E402
from tests.app.builders import MARKDOWN_CASES  # noqa: E402

for i, text in enumerate(MARKDOWN_CASES):
    with st.container(key=f"case{i}"):
        st.markdown(fmt("{}", text))
        st.caption(fmt("{}", text))
        st.info(fmt("{}", text))
        st.checkbox(fmt("{}", text), key=f"checkbox{i}")
        st.selectbox(fmt("{}", text), ["a"], key=f"select{i}")
        st.radio("r", [text], key=f"radio{i}", format_func=lambda t: fmt("{}", t))
        st.metric(fmt("{}", text), fmt("{}", text))
        with st.expander(fmt("{}", text)):
            st.write("inside")
st.markdown("**done**")
