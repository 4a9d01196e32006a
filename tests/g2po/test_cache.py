from g2po.cache import user_cache_dir


def test_the_cache_folder_follows_g2po_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path))
    assert user_cache_dir() == tmp_path
    monkeypatch.setenv("G2PO_CACHE", "~/somewhere")
    assert user_cache_dir() == user_cache_dir().home() / "somewhere"
    monkeypatch.delenv("G2PO_CACHE")
    assert user_cache_dir().parts[-2:] == (".cache", "g2po")


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path):
    from g2po.cache import atomic_file

    target = tmp_path / "sub" / "table.json"
    with atomic_file(target) as tmp:
        tmp.write_text("first")
        assert not target.exists()  # nothing there until the block ends
    assert target.read_text() == "first"
    try:
        with atomic_file(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("the writer failed")
    except RuntimeError:
        pass
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["table.json"]  # no leftover
