"""Short stopword lists for the nine MultiMSD languages (Cardon & Grabar's "common non-stopwords" feature).

nltk's stopwords corpus needs a download, and multimsd runs offline, so these lists are bundled: the most
frequent function words of each language (articles, pronouns, prepositions, conjunctions, auxiliaries and
copulas), lowercased. They are deliberately short; a feature that counts shared *content* words only needs
the words that every sentence shares by accident removed.

Japanese entries are MeCab/UniDic surface forms (particles, auxiliaries, formal nouns); Chinese entries are
single Han characters, because :func:`multimsd.text.word_tokenize` splits Chinese into characters.
"""

from __future__ import annotations

_LISTS = {
    "en": """a an the and or but if then so than that this these those there here of in on at to from by
        with without for as into onto over under about after before between through during is are was were
        be been being am do does did done have has had having it its it's i me my we our you your he him his
        she her they them their what which who whom whose when where why how not no nor can could will would
        shall should may might must also such other some any each all both more most very only own same too
        just up down out off again further once""",
    "de": """der die das den dem des ein eine einer eines einem einen und oder aber wenn dann als wie so
        dass daß da hier dort von vom zu zum zur mit ohne für gegen in im ins an am auf aus bei nach über
        unter vor zwischen durch um bis ist sind war waren sein seine seiner seinen seinem wird werden wurde
        wurden worden hat haben hatte hatten kann können könnte muss müssen soll sollte sollten darf es er
        sie wir ihr ich du man sich ihm ihn ihre ihrer ihren nicht kein keine auch noch nur sehr mehr
        dies diese dieser dieses diesen was welche welcher wer wo""",
    "es": """el la los las un una unos unas y e o u pero si sino que de del al a en con sin por para
        sobre entre hasta desde durante ante tras es son era eran ser sido está están estar fue fueron ha
        han haber hay había se su sus le les lo me mi te tu nos os él ella ellos ellas usted ustedes no ni
        también muy más menos como cuando donde este esta estos estas ese esa esos esas cual cuales quien
        quienes otro otra otros otras todo toda todos todas puede pueden""",
    "fr": """le la les l un une des du de d et ou mais si que qu qui quoi dont où à au aux en dans par
        pour sur sous avec sans entre vers chez est sont était étaient être été a ont avait avoir ce cet
        cette ces se s sa son ses leur leurs il ils elle elles on nous vous je j me m te t lui y ne n pas
        plus moins très aussi comme quand tout tous toute toutes autre autres peut peuvent""",
    "it": """il lo la i gli le un uno una l e ed o ma se che di del dello della dei degli delle a al allo
        alla ai agli alle da dal dalla dai in nel nello nella nei negli nelle con su sul sulla per tra fra
        è sono era erano essere stato stata stati ha hanno avere aveva si sua suo suoi sue loro lui lei
        esso essa ci vi mi ti non né anche molto più meno come quando dove questo questa questi queste
        quello quella quelli quelle cui chi può possono""",
    "pt": """o a os as um uma uns umas e ou mas se que de do da dos das em no na nos nas por pelo pela
        pelos pelas para com sem sobre entre até ao aos à às é são era eram ser sido está estão estar foi
        foram tem têm ter há havia seu sua seus suas lhe lhes ele ela eles elas você vocês me te não nem
        também muito mais menos como quando onde este esta estes estas esse essa esses essas isso isto
        qual quais quem outro outra outros outras pode podem""",
    "ru": """и в во не на с со что как а но или же бы ли то это этот эта эти того этого к ко по от до
        из за для о об при про без над под между через у он она оно они его ее её их ему ей им ими мы вы
        я ты себя свой своя свои своих который которая которые которых быть был была были будет будут
        является являются есть также так только очень более менее уже может могут""",
    # UniDic surface forms: case and topic particles, auxiliaries, light verbs, formal nouns.
    "ja": """の に は を が と で て た だ し も な や か へ より から まで など ば ね よ れ られ せ させ
        ない ます です でし まし ませ ある あり いる い いう する さ され こと もの ため よう これ それ
        あれ この その あの ここ そこ また および 及び または 又は""",
    # Single characters: structural particles, pronouns, copulas, common prepositions and conjunctions.
    "zh": """的 了 和 与 及 或 是 在 有 也 就 都 而 这 那 之 其 为 以 于 被 把 将 等 中 对 从 到 由 并 但
        如 若 则 即 一 我 你 他 她 它 们 个 些 不 没 会 可 能 要 很 更 最 所 者""",
}

STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _LISTS.items()}


def stopwords(lang: str) -> frozenset[str]:
    """The stopword set of ``lang`` (empty for a language without a list: every word then counts)."""
    return STOPWORDS.get(lang, frozenset())
