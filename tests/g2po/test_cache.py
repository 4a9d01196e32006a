from g2po.cache import user_cache_dir


def test_the_cache_folder_follows_g2po_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("G2PO_CACHE", str(tmp_path))
    assert user_cache_dir() == tmp_path
    monkeypatch.setenv("G2PO_CACHE", "~/somewhere")
    assert user_cache_dir() == user_cache_dir().home() / "somewhere"
    monkeypatch.delenv("G2PO_CACHE")
    assert user_cache_dir().parts[-2:] == (".cache", "g2po")
