-- The fixture of tests/readme.sh: the tables the README's examples take
-- for granted. `docs (id, body)` holds short news paragraphs in Chinese and
-- English with near copies of some (a character changed, a footer
-- appended, a sentence edited); `staging (body, crawled_at)` is a batch to
-- load into it, with copies of rows of docs and of each other. The README
-- adds the fingerprint column, the indexes and the rest itself.
CREATE TABLE docs (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body text NOT NULL
);

CREATE TEMP TABLE originals (n int, body text);
INSERT INTO originals VALUES
(1, '国务院总理李鹏今天在人民大会堂会见了来访的日本客人。双方就进一步发展两国经济合作、扩大贸易往来和加强青年交流等问题深入交换了意见。李鹏表示，中国政府重视中日关系，愿同日本各界人士一道，为两国关系的长期稳定发展作出努力。'),
(2, '据气象部门预报，受北方冷空气影响，本周后期我国中东部地区将出现大范围降温天气，部分地区气温下降八到十度，并伴有四到六级偏北风。气象专家提醒，公众应及时添加衣物，农业部门要做好越冬作物的防冻工作，交通部门要注意道路结冰。'),
(3, '今年全省粮食总产量再创历史新高，达到三千二百万吨，比去年增长百分之四点五。省农业厅负责人介绍，增产的主要原因是推广了优良品种和科学施肥技术，同时加大了农田水利建设的投入，有效抵御了夏季的干旱。'),
(4, '市文化局日前举办了春节群众文艺汇演，来自全市各区县的二十多支业余文艺队伍参加了演出。节目形式多样，有歌舞、戏曲、相声和民间杂技，吸引了上万名市民观看。主办方表示，今后将把这项活动办成每年一度的群众文化节。'),
(5, 'The city council approved a new budget on Tuesday that raises spending on road repairs and public libraries while keeping property taxes flat. The mayor said the plan reflects what residents asked for at a series of town meetings last autumn, and the finance director warned that the reserve fund will need to be rebuilt within three years.'),
(6, 'Researchers at the university have developed a low-cost sensor that detects contaminated drinking water within minutes. The device uses a paper strip coated with enzymes that change color in the presence of common bacteria, and field trials in twelve villages showed results that matched laboratory tests in nearly every case.'),
(7, 'Heavy snow closed the mountain pass for the third time this month, stranding dozens of trucks on both sides of the border. Highway crews worked through the night to clear the road, and officials said it would reopen by noon if the wind eased, but they urged drivers to carry chains, blankets and extra fuel.'),
(8, 'The museum opened an exhibition of maps drawn by sailors in the sixteenth century, many of them shown to the public for the first time. Curators spent two years restoring the fragile sheets, and visitors can now compare coastlines as they were imagined with satellite images projected beside them.');

INSERT INTO docs (body) SELECT body FROM originals ORDER BY n;
-- Near copies: one character changed, a footer appended, a word inserted.
INSERT INTO docs (body) VALUES
(replace((SELECT body FROM originals WHERE n = 1), '深入', '充分')),
((SELECT body FROM originals WHERE n = 2) || '（新华社北京电）'),
(replace((SELECT body FROM originals WHERE n = 3), '三千二百万吨', '三千三百万吨')),
(replace((SELECT body FROM originals WHERE n = 5), 'on Tuesday', 'on Tuesday evening')),
((SELECT body FROM originals WHERE n = 6) || ' Reporting by the science desk.'),
(replace((SELECT body FROM originals WHERE n = 7), 'third time', 'fourth time'));

CREATE TABLE staging (body text NOT NULL, crawled_at timestamptz NOT NULL);
INSERT INTO staging VALUES
(replace((SELECT body FROM originals WHERE n = 4), '二十多支', '三十多支'), '2026-01-02 08:00'),
((SELECT body FROM originals WHERE n = 8) || ' Admission is free on Sundays.', '2026-01-02 09:00'),
('The regional airport will add two daily flights to the capital starting in March, the operator announced, after passenger numbers grew by a fifth over the past year. Local businesses welcomed the news, saying that easier travel would help them attract clients and staff from outside the valley.', '2026-01-02 10:00'),
('The regional airport will add two daily flights to the capital starting in April, the operator announced, after passenger numbers grew by a fifth over the past year. Local businesses welcomed the news, saying that easier travel would help them attract clients and staff from outside the valley.', '2026-01-02 11:00'),
('农业科技人员深入田间地头，为农民讲解冬小麦的田间管理技术，发放科普资料五千多份，受到当地群众的欢迎。', '2026-01-02 12:00');
DROP TABLE originals;
ANALYZE docs;
ANALYZE staging;
