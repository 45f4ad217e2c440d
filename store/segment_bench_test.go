package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// zhBenchSentences are everyday Chinese sentences that benchmark chunks are
// drawn from.
var zhBenchSentences = []string{
	"我们正在研究人工智能在医疗领域的应用。",
	"安娜下周要搬到上海，她在一家人工智能公司找到了新工作。",
	"昨天晚上我和朋友去吃了北京烤鸭，味道非常好。",
	"他的电子邮件地址已经更改了，请更新通讯录。",
	"机器学习模型需要大量的训练数据。",
	"明天上午十点我们在会议室讨论新项目的预算。",
	"这本书讲的是一个年轻人在城市里寻找梦想的故事。",
	"请把上周的销售报告发给我，我想看看增长的原因。",
	"周末天气很好，我们打算去西湖边散步。",
	"她说如果火车晚点的话，她会先给我们打电话。",
	"医生建议他每天锻炼半个小时，少吃油腻的食物。",
	"公司决定明年在深圳开设一个新的研发中心。",
	"孩子们在公园里放风筝，笑得特别开心。",
	"这个软件的新版本修复了很多安全漏洞。",
	"我忘记带雨伞了，只好在咖啡馆里等雨停。",
	"老师让学生们用自己的话总结这篇文章的主要观点。",
}

// textBatch builds one session of n chunks of lang text ("en": ~40 Zipf
// words, ~200 bytes; "zh": four sentences, ~200 characters), no vectors.
func textBatch(r *rand.Rand, lang string, session, n int) Batch {
	ref := SessionRef{Namespace: "bench", SessionKey: "k", SessionID: fmt.Sprint("s-", session)}
	b := Batch{Seq: uint64(session + 1), Rechunk: []SessionChunks{{Session: ref}}}
	for i := 0; i < n; i++ {
		var text string
		if lang == "zh" {
			var sb strings.Builder
			for j := 0; j < 4; j++ {
				sb.WriteString(zhBenchSentences[r.IntN(len(zhBenchSentences))])
			}
			text = sb.String()
		} else {
			text = zipfText(r, 40)
		}
		b.Rechunk[0].Chunks = append(b.Rechunk[0].Chunks, Chunk{ID: fmt.Sprintf("c-%d-%d", session, i),
			Source: "sessions", SeqStart: int64(i), SeqEnd: int64(i), Text: text})
	}
	return b
}

// BenchmarkApplyText measures Apply (chunks, FTS rows) of English and of
// Chinese text, 200 chunks a batch, no vectors: the cost of segmentation at
// ingest. English text must cost what it cost before segmentation existed.
func BenchmarkApplyText(b *testing.B) {
	for _, lang := range []string{"en", "zh"} {
		b.Run("lang="+lang, func(b *testing.B) {
			const per = 200
			ctx := context.Background()
			s := openTest(b, testDims)
			r := rand.New(rand.NewPCG(1, 2))
			// One batch first: loads the dictionary (once per process), outside the timing.
			if _, err := s.Apply(ctx, textBatch(r, lang, -1, per)); err != nil {
				b.Fatal(err)
			}
			batches := make([]Batch, b.N)
			for i := range batches {
				batches[i] = textBatch(r, lang, i, per)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}
